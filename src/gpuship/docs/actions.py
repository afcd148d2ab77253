"""Action reference pages generated from the `action.yml` files, so docs cannot drift."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuship.errors import InputError


class ActionInput(BaseModel):
    """One `inputs:` entry of an action.yml."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    description: str = ""
    required: bool = False
    default: str | None = None
    deprecation_message: str | None = Field(default=None, alias="deprecationMessage")


class ActionOutput(BaseModel):
    """One `outputs:` entry of an action.yml."""

    model_config = ConfigDict(extra="allow")
    description: str = ""


class ActionMetadata(BaseModel):
    """The parts of an action.yml the reference shows."""

    model_config = ConfigDict(extra="allow")
    name: str
    description: str = ""
    inputs: dict[str, ActionInput] = Field(default_factory=dict)
    outputs: dict[str, ActionOutput] = Field(default_factory=dict)


@dataclass(frozen=True)
class ActionDoc:
    """An action and how users reference it."""

    uses: str  # "gpuship/gpuship/actions/lint" or "gpuship/gpuship" for the root action
    slug: str  # page name: "lint", or "gpuship" for the root action
    metadata: ActionMetadata


def read_action(path: Path) -> ActionMetadata:
    """Parse one action.yml (bad YAML or shape is an InputError naming the file)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        return ActionMetadata.model_validate(data)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        first = str(exc).splitlines()[0]
        raise InputError(f"{path}: not a valid action.yml: {first}") from None


def discover_actions(repo_root: Path, owner_repo: str = "gpuship/gpuship") -> list[ActionDoc]:
    """The root action and every public `actions/<name>/action.yml` (not `_` internal ones)."""
    docs = [ActionDoc(owner_repo, "gpuship", read_action(repo_root / "action.yml"))]
    for path in sorted((repo_root / "actions").glob("*/action.yml")):
        name = path.parent.name
        if not name.startswith("_"):
            docs.append(ActionDoc(f"{owner_repo}/actions/{name}", name, read_action(path)))
    return docs


def render_action_page(doc: ActionDoc, ref: str = "v1") -> str:
    """The reference page of one action: usage snippet, inputs and outputs tables."""
    meta = doc.metadata
    lines = [f"# `{doc.uses}`", "", meta.description.strip(), "", "```yaml"]
    lines.append(f"- uses: {doc.uses}@{ref}")
    required = [(name, spec) for name, spec in meta.inputs.items() if spec.required]
    if required:
        lines.append("  with:")
        lines.extend(f"    {name}: ..." for name, _ in required)
    lines += ["```", "", render_inputs_table(meta), "", render_outputs_table(meta), ""]
    return "\n".join(lines)


def render_inputs_table(meta: ActionMetadata) -> str:
    """Markdown table of an action's inputs."""
    if not meta.inputs:
        return "No inputs."
    rows = ["| input | required | default | description |", "|---|---|---|---|"]
    for name, spec in meta.inputs.items():
        default = f"`{spec.default}`" if spec.default not in (None, "") else ""
        description = _one_line(spec.description)
        if spec.deprecation_message:
            description += f" **Deprecated:** {_one_line(spec.deprecation_message)}"
        required = "yes" if spec.required else "no"
        rows.append(f"| `{name}` | {required} | {default} | {description} |")
    return "\n".join(rows)


def render_outputs_table(meta: ActionMetadata) -> str:
    """Markdown table of an action's outputs."""
    if not meta.outputs:
        return "No outputs."
    rows = ["| output | description |", "|---|---|"]
    rows.extend(
        f"| `{name}` | {_one_line(spec.description)} |" for name, spec in meta.outputs.items()
    )
    return "\n".join(rows)


def _one_line(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
