"""A preset's model card in the reader's language: where it comes from (source, licence, size,
revision), its weights, its published evaluation (the upstream's, with dataset, split and
source, or the offline presets' test tool results) and the command that reproduces it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from portal.i18n import gettext
from portal.registry import words

if TYPE_CHECKING:
    from portal.presets.catalog import Preset


def _cell(value: object) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value).replace("|", "\\|")
    return f"{value:,}" if isinstance(value, int) else f"{value:.4f}".rstrip("0").rstrip(".")


def origin(preset: Preset) -> list[str]:
    """The card's "Source" section: one line each for source, licence, size and revision."""
    url = preset.hub_url()
    lines = []
    if url:
        name = preset.mirror or url
        lines.append(gettext("Source: [%(name)s](%(url)s)", name=name, url=url))
    if preset.modelscope:
        ms = f"https://modelscope.cn/models/{preset.modelscope}"
        lines.append(gettext("On ModelScope: [%(name)s](%(url)s)", name=preset.modelscope, url=ms))
    lines.append(gettext("Licence: %(licence)s", licence=preset.license))
    if preset.params:
        millions = f"{preset.params / 1e6:,.1f}"
        lines.append(gettext("Parameters: %(millions)s million", millions=millions))
    if preset.size_mb:
        mb = f"{preset.size_mb:,.1f}"
        lines.append(gettext("Size of the mirrored files: %(mb)s MB", mb=mb))
    if preset.mirror:
        lines.append(gettext("Revision: `%(revision)s`", revision=preset.revision))
    return ["## " + gettext("Source"), "", *(f"- {line}" for line in lines), ""]


def weights(preset: Preset) -> list[str]:
    if not preset.mirror:
        text = gettext("Trained from data installed with scikit-learn; no weights to download.")
        return ["## " + gettext("Weights"), "", text, ""]
    text = gettext(
        "Weights come from the offline mirror (`%(mirror)s` under the mirror "
        "directory); nothing is downloaded when a job runs.",
        mirror=preset.mirror,
    )
    fill = f"`aipool models mirror fill {preset.name} --from huggingface`"
    how = gettext("The site fills it with %(command)s.", command=fill)
    return ["## " + gettext("Weights"), "", text, "", how, ""]


def _table(metrics: dict[str, Any]) -> list[str]:
    rows = [f"| {words.metric(name)} | {_cell(value)} |" for name, value in metrics.items()]
    metric, value = gettext("Metric"), gettext("Value")
    return [f"| {metric} | {value} |", "| --- | --- |", *rows]


def evaluation(preset: Preset) -> list[str]:
    """The published results and the command that reproduces them; none when there are none."""
    command = f"`{preset.reproduce()}`"
    results = preset.results()
    if results:
        return [
            "## " + gettext("Evaluation (published)"),
            "",
            *_table(results["metrics"]),
            "",
            gettext("Measured by %(command)s.", command=command),
            "",
        ]
    published = preset.published
    if not published or not published.get("metrics"):
        return []
    said = (
        gettext(
            "Published by the model's authors on %(dataset)s (%(split)s split):",
            dataset=published.get("dataset", "?"),
            split=published["split"],
        )
        if published.get("split")
        else gettext(  # the upstream does not say which split it scored
            "Published by the model's authors on %(dataset)s:",
            dataset=published.get("dataset", "?"),
        )
    )
    lines = ["## " + gettext("Evaluation (published)"), "", said, "", *_table(published["metrics"])]
    if published.get("source"):
        lines += [
            "",
            gettext(
                "Source: [%(name)s](%(url)s)", name=published["source"], url=published["source"]
            ),
        ]
    lines += [
        "",
        gettext(
            "Reproduce it with %(command)s, with that split mounted as the evaluation's "
            "dataset (without one, the job scores the preset's small bundled test set).",
            command=command,
        ),
        "",
    ]
    return lines


def body(preset: Preset) -> str:
    lines = [f"# {gettext(preset.title)}", "", gettext(preset.summary), ""]
    lines += origin(preset) + weights(preset) + evaluation(preset)
    lines += [
        "## " + gettext("How to use it"),
        "",
        gettext(
            "Import the preset into a project, then fine-tune, evaluate and deploy it from "
            "the registry; the served API takes and returns the JSON described by the input "
            "and output schemas."
        ),
    ]
    return "\n".join(lines)
