"""The job submission form (labels in the reader's language) and what a Jupyter job asks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask_wtf import FlaskForm
from wtforms import IntegerField, SelectField, StringField, TextAreaField
from wtforms.validators import DataRequired, Length, NumberRange, Optional

from gres.naming import DEFAULT_SHARDS_PER_GPU
from jobspec.schema import SHARE_WITH_TYPE
from portal.i18n import lazy_gettext
from portal.names import NameRule
from translations import N_

SCRIPT = "#!/bin/bash\nset -euo pipefail\nnvidia-smi || true\nsleep 60\n"


class JobForm(FlaskForm):
    kind = SelectField(lazy_gettext("Job type"), default="batch")
    project_id = SelectField(lazy_gettext("Project"), coerce=int)
    name = StringField(
        lazy_gettext("Name"), validators=[DataRequired(), Length(max=64), NameRule()]
    )
    partition = StringField(lazy_gettext("Partition"), validators=[Optional(), Length(max=32)])
    qos = StringField(lazy_gettext("QOS (priority)"), validators=[Optional(), Length(max=32)])
    gpus = IntegerField(
        lazy_gettext("Whole GPUs"), validators=[Optional(), NumberRange(min=1, max=64)]
    )
    shards = IntegerField(
        lazy_gettext("GPU shards (each 1/32 of a card)"),
        validators=[Optional(), NumberRange(1, 2048)],
    )
    npus = IntegerField(lazy_gettext("NPUs"), validators=[Optional(), NumberRange(min=1, max=64)])
    mlus = IntegerField(
        lazy_gettext("Cambricon MLUs"), validators=[Optional(), NumberRange(min=1, max=64)]
    )
    dcus = IntegerField(
        lazy_gettext("Hygon DCUs"), validators=[Optional(), NumberRange(min=1, max=64)]
    )
    xpus = IntegerField(
        lazy_gettext("Kunlunxin XPUs"), validators=[Optional(), NumberRange(min=1, max=64)]
    )
    gres_type = StringField(
        lazy_gettext("Device type (e.g. a100 or 910b)"), validators=[Optional(), Length(max=32)]
    )
    cpus = IntegerField(
        lazy_gettext("CPUs per task"), validators=[Optional(), NumberRange(min=1, max=4096)]
    )
    time_limit = IntegerField(
        lazy_gettext("Time limit (minutes)"),
        default=60,
        validators=[DataRequired(), NumberRange(min=1, max=43200)],
    )
    script = TextAreaField(lazy_gettext("Batch script"), default=SCRIPT, validators=[Optional()])


def jupyter_spec(data: dict[str, Any]) -> dict[str, Any]:
    """The form's fields as a Jupyter job spec (:mod:`jobspec`): JupyterLab from the job
    runtime, with the resources asked for; no conda environment needed."""
    resources: dict[str, Any] = {"time": int(data["time_limit"])}
    if data.get("gpus"):
        resources["gpus"] = int(data["gpus"])
    elif data.get("shards"):
        resources["gpus"] = f"{int(data['shards'])}/{DEFAULT_SHARDS_PER_GPU}"
    card = next((k for k in ("npus", "mlus", "dcus", "xpus") if data.get(k)), None)
    if card:
        resources[card] = int(data[card])
    if data.get("gres_type"):
        resources[f"{card[:-1]}_type" if card else "gpu_type"] = data["gres_type"]
    if data.get("cpus"):
        resources["cpus"] = int(data["cpus"])
    spec: dict[str, Any] = {"name": data["name"], "jupyter": {"app": "lab"}, "resources": resources}
    if data.get("partition"):
        spec["partition"] = data["partition"]
    return spec


#: the spec's advice that names spec fields the form does not have -> the form's own
_FORM_ADVICE = {
    SHARE_WITH_TYPE: N_(
        "A share of a card cannot choose the card type; leave the device type empty, or ask "
        "for whole GPUs"
    ),
}

#: the fields of a Jupyter spec -> the form's fields that filled them
_SPEC_FIELDS = {
    "name": "name",
    "partition": "partition",
    "resources.time": "time_limit",
    "resources.cpus": "cpus",
    **{f"resources.{k}": k for k in ("npus", "mlus", "dcus", "xpus")},
    **{f"resources.{k}_type": "gres_type" for k in ("gpu", "npu", "mlu", "dcu", "xpu")},
}


def spec_errors_on_fields(errors: Mapping[str, Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """A Jupyter spec's refusals (``spec``: ``path: message`` lines) on the form's fields that
    made those spec fields, without the path; the rest stay under ``spec``."""
    out = {k: v for k, v in errors.items() if k != "spec"}
    rest: list[str] = []
    for line in errors.get("spec", []):
        path, sep, message = str(line).partition(": ")
        if path == "resources.gpus":
            field: str | None = "gpus" if data.get("gpus") else "shards"
        else:
            field = _SPEC_FIELDS.get(path)
        if sep and field:
            out.setdefault(field, []).append(_FORM_ADVICE.get(message, message))
        else:
            rest.append(str(line))
    if rest:
        out["spec"] = rest
    return out
