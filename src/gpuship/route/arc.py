"""Actions Runner Controller: runner scale sets whose runner pods land only on the Kubernetes
nodes where verify passes for the images they run.

A runner scale set is addressed by its name (`runs-on: <name>`); from gha-runner-scale-set
0.14.0 it can carry more labels (`scaleSetLabels` in the chart, `spec.runnerScaleSetLabels`
of the AutoscalingRunnerSet; actions/actions-runner-controller#4408), set when the scale set
is created. Each scale set here is gha-runner-scale-set Helm values for the images whose node
constraints are the same (`route.kubernetes`): `runnerScaleSetName`, the images' matrix cell
ids as `scaleSetLabels` (so `runs-on: <cell id>` finds it on ARC >= 0.14), and the node
affinity and tolerations as `template.spec` (the chart copies every `template.spec` key but
the containers, volumes and service account into the runner pod). The name is derived from the
constraints, so the same needs give the same scale set on every run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

from gpuship.route.result import ArcScaleSet, KubernetesDocument

NAME_PREFIX = "gpuship-"
# The chart refuses an empty label or one of 256 characters or more.
MAX_LABEL = 255


def scale_sets(
    documents: Sequence[KubernetesDocument], cells: Mapping[str, bool]
) -> tuple[ArcScaleSet, ...]:
    """One scale set per distinct set of node constraints; images no node can run get none.
    `cells` says which image names are matrix cell ids (labels); others are references."""
    groups: dict[str, list[KubernetesDocument]] = {}
    for document in documents:
        spec = {k: v for k, v in document.items() if k != "image"}
        if spec:
            groups.setdefault(json.dumps(spec, sort_keys=True), []).append(document)
    found = []
    for key, members in groups.items():
        spec = {k: v for k, v in members[0].items() if k != "image"}
        images = tuple(str(d["image"]) for d in members)
        name = NAME_PREFIX + hashlib.sha256(key.encode()).hexdigest()[:12]
        labels = tuple(
            sorted({i for i in images if cells.get(i) and 0 < len(i) <= MAX_LABEL and i != name})
        )
        values: dict[str, Any] = {"runnerScaleSetName": name}
        if labels:
            values["scaleSetLabels"] = list(labels)
        values["template"] = {"spec": spec}
        found.append(ArcScaleSet(name=name, labels=labels, images=images, values=values))
    return tuple(sorted(found, key=lambda s: s.images))
