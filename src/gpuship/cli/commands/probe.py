"""`gpuship probe`: a candidate image under open-loop load and memory shortage, gated on its
tail latency, GPU memory and overload behaviour, against SLOs and against `stable`."""

from __future__ import annotations

import argparse
from pathlib import Path

from gpuship.cli.context import Context
from gpuship.errors import UsageError
from gpuship.report import Report
from gpuship.report.progress import Progress

NAME = "probe"
HELP = "load-test a candidate image on a GPU runner: tail latency, GPU memory, OOM, vs stable"
# Flags that set a gpuship.yaml key (flags > environment > file: `config/options.py`).
CONFIG_FLAGS = {"trials": "probe.compare.trials"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Flags of `gpuship probe`."""
    parser.add_argument("image", help="candidate image (REGISTRY/REPO:TAG or @sha256:...)")
    parser.add_argument(
        "--stable",
        metavar="IMAGE",
        help="image to compare with (default: the candidate's repository at "
        "probe.compare.stable-tag)",
    )
    parser.add_argument(
        "--no-compare", action="store_true", help="judge the candidate on its SLOs only"
    )
    parser.add_argument(
        "--url",
        metavar="URL",
        help="probe a server already running at http://HOST:PORT instead of starting IMAGE "
        "(no comparison; IMAGE only names it)",
    )
    parser.add_argument("--trials", type=int, help="trials per image (probe.compare.trials)")
    parser.add_argument(
        "--job",
        action="store_true",
        help="job mode: run the image's command to the end under probe.job.timeout-s and "
        "report peak GPU memory, time per step and out-of-memory",
    )


def run(args: argparse.Namespace, ctx: Context) -> Report:
    """Probe the image (or the job) and report."""
    from gpuship.probe.config import ProbeConfig

    config = ctx.config.section(ProbeConfig)
    base = ctx.config_path.parent if ctx.config_path else Path.cwd()

    progress = Progress(prefix="gpuship probe: ").line
    if args.job:
        from gpuship.probe.job import run_job

        return _with_json_file(run_job(args.image, config, ctx.environ, progress), args)
    from gpuship.probe.session import ProbeRequest, probe, stable_of

    if args.url and args.stable:
        raise UsageError("probe --url measures one server; --stable needs images to start")
    stable = None
    if not (args.no_compare or args.url):
        stable = args.stable or stable_of(args.image, config.compare.stable_tag)
        if stable == args.image:
            stable = None  # the candidate is what stable points at: nothing to compare
    request = ProbeRequest(args.image, stable, args.url, config, base, ctx.environ, ctx.limits)
    return _with_json_file(probe(request, progress), args)


def _with_json_file(report: Report, args: argparse.Namespace) -> Report:
    """Name the JSON report file among the step outputs when one is written."""
    if args.output and args.format == "json":
        report.outputs["json-file"] = args.output
    return report


def result_type() -> object:
    """A service probed under load, or (--job) a job run to its end."""
    from gpuship.probe.result import JobResult, ProbeResult

    return ProbeResult | JobResult
