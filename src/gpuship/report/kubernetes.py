"""`--format k8s` and `--format arc`: a command's Kubernetes documents as YAML.

k8s: one YAML document per image, each a PodSpec fragment (`affinity`, `tolerations`) headed
by a comment naming the image, ready to merge into a Deployment's or Job's pod template.
arc: one YAML document per Actions Runner Controller scale set, gha-runner-scale-set Helm
values headed by comments naming its images and how a job targets it.
"""

from __future__ import annotations

import yaml

from gpuship.errors import UsageError
from gpuship.redaction import redact_data
from gpuship.report.model import Report
from gpuship.report.result import to_json

KUBERNETES_KEY = "kubernetes"


class _PlainDumper(yaml.SafeDumper):
    """Repeated requirements are written out each time: no `&id001` anchors, which readers
    of a pod spec (and `kubectl`) should not have to resolve."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def _comment(text: object) -> str:
    """Text for a `# ...` comment line: every character that is not printable (a YAML line
    break among them: LF, CR, NEL, U+2028, U+2029) escaped, so a name from outside (a cell id,
    an image's io.gpuship.cell label) can never end the comment and write keys of its own."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in str(text))


def render_kubernetes(report: Report) -> str:
    """The fragments; an image no node can run gets a comment saying so, and no fragment."""
    # Any command whose result has a `kubernetes` list of documents can be shown this way.
    result = redact_data(to_json(report.result))  # YAML escapes non-ASCII text
    documents = result.get(KUBERNETES_KEY) if isinstance(result, dict) else None
    if not isinstance(documents, list):
        raise UsageError(f"--format k8s: 'gpuship {report.command}' has no Kubernetes output")
    parts = []
    for document in documents:
        fragment = {k: v for k, v in document.items() if k != "image"}
        if not fragment:
            parts.append(f"# {_comment(document['image'])}: no node can run this image\n{{}}\n")
            continue
        body = yaml.dump(fragment, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False)
        parts.append(f"# {_comment(document['image'])}\n{body}")
    return "---\n" + "---\n".join(parts)


ARC_KEY = "arc"


def render_arc(report: Report) -> str:
    """The scale sets' Helm values; images no node can run are named in a comment."""
    result = redact_data(to_json(report.result))  # YAML escapes non-ASCII text
    scale_sets = result.get(ARC_KEY) if isinstance(result, dict) else None
    documents = result.get(KUBERNETES_KEY) if isinstance(result, dict) else None
    if not isinstance(scale_sets, list) or not isinstance(documents, list):
        raise UsageError(f"--format arc: 'gpuship {report.command}' has no ARC output")
    parts = []
    for scale_set in scale_sets:
        body = yaml.dump(
            scale_set["values"], Dumper=_PlainDumper, sort_keys=False, default_flow_style=False
        )
        images = "".join(f"#   {_comment(image)}\n" for image in scale_set["images"])
        labels = " or ".join(scale_set["labels"])
        target = f"runs-on: {scale_set['name']}" + (
            f" (ARC >= 0.14 also: runs-on: {labels})" if labels else ""
        )
        parts.append(
            f"# scale set {_comment(scale_set['name'])}, for\n{images}# {_comment(target)}\n{body}"
        )
    placed = {image for scale_set in scale_sets for image in scale_set["images"]}
    nowhere = [d["image"] for d in documents if d["image"] not in placed]
    parts += [f"# {_comment(image)}: no node can run this image\n{{}}\n" for image in nowhere]
    return "---\n" + "---\n".join(parts)
