"""`--format k8s`: a command's Kubernetes documents (route's PodSpec fragments) as YAML.

One YAML document per image, each a PodSpec fragment (`affinity`, `tolerations`) headed by a
comment naming the image, ready to merge into a Deployment's or Job's pod template.
"""

from __future__ import annotations

import yaml

from gpuship.errors import UsageError
from gpuship.report.model import Report
from gpuship.report.result import to_json

KUBERNETES_KEY = "kubernetes"


class _PlainDumper(yaml.SafeDumper):
    """Repeated requirements are written out each time: no `&id001` anchors, which readers
    of a pod spec (and `kubectl`) should not have to resolve."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def render_kubernetes(report: Report) -> str:
    """The fragments; an image no node can run gets a comment saying so, and no fragment."""
    # Any command whose result has a `kubernetes` list of documents can be shown this way.
    result = to_json(report.result)
    documents = result.get(KUBERNETES_KEY) if isinstance(result, dict) else None
    if not isinstance(documents, list):
        raise UsageError(f"--format k8s: 'gpuship {report.command}' has no Kubernetes output")
    parts = []
    for document in documents:
        fragment = {k: v for k, v in document.items() if k != "image"}
        if not fragment:
            parts.append(f"# {document['image']}: no node can run this image\n{{}}\n")
            continue
        body = yaml.dump(fragment, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False)
        parts.append(f"# {document['image']}\n{body}")
    return "---\n" + "---\n".join(parts)
