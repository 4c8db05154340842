from __future__ import annotations

from typing import Any

from marshmallow import Schema, fields, validate

from jobspec.names import Name
from portal.jobs.service import JobView
from portal.schemas import ident, text
from slurm_plugins.client.models import JobState
from translations import N_

# translated where the portal answers (portal.i18n.translate_messages)
_IDENT = validate.Regexp(
    r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", error=N_("Letters, digits, _ . and - only.")
)


class JobSubmitSchema(Schema):
    project_id = ident(required=True)
    name = fields.String(required=True, validate=[validate.Length(min=1, max=64), Name()])
    script = fields.String(required=True, validate=validate.Length(min=3))
    time_limit = fields.Integer(
        required=True,
        strict=True,
        validate=validate.Range(min=1, max=60 * 24 * 30),
        metadata={"description": "minutes"},
    )
    partition = fields.String(validate=[validate.Length(max=32), _IDENT])
    qos = fields.String(validate=[validate.Length(max=32), _IDENT])
    nodes = fields.Integer(strict=True, validate=validate.Range(min=1, max=1024))
    cpus = fields.Integer(
        strict=True,
        validate=validate.Range(min=1, max=4096),
        metadata={"description": "CPUs per task"},
    )
    memory_mb = fields.Integer(strict=True, validate=validate.Range(min=1, max=2**31 - 1))
    gpus = fields.Integer(strict=True, validate=validate.Range(min=1, max=64))
    shards = fields.Integer(strict=True, validate=validate.Range(min=1, max=2048))
    npus = fields.Integer(strict=True, validate=validate.Range(min=1, max=64))
    mlus = fields.Integer(
        strict=True,
        validate=validate.Range(min=1, max=64),
        metadata={"description": "Cambricon MLUs"},
    )
    dcus = fields.Integer(
        strict=True, validate=validate.Range(min=1, max=64), metadata={"description": "Hygon DCUs"}
    )
    xpus = fields.Integer(
        strict=True,
        validate=validate.Range(min=1, max=64),
        metadata={"description": "Kunlunxin XPUs"},
    )
    gres_type = fields.String(
        validate=[validate.Length(max=32), _IDENT],
        metadata={"description": "device type, e.g. a100, 910b, mlu370"},
    )


class SpecSubmitSchema(Schema):
    project_id = ident(required=True)
    spec = fields.Dict(
        required=True,
        metadata={"description": "one job spec, as `aipool submit` reads it (see jobspec)"},
    )


class JobSubmittedSchema(Schema):
    job_id = fields.Integer()


class JobQuerySchema(Schema):
    project_id = ident(query=True)
    state = fields.String(validate=validate.OneOf([s.value for s in JobState]))
    user = text(32)


class JobSchema(Schema):
    job_id = fields.Integer()
    name = fields.String()
    user = fields.String()
    account = fields.String()
    project_id = fields.Integer(allow_none=True)
    partition = fields.String()
    qos = fields.String()
    state = fields.String()
    reason = fields.String()
    submit_time = fields.DateTime(allow_none=True)
    start_time = fields.DateTime(allow_none=True)
    end_time = fields.DateTime(allow_none=True)
    time_limit_min = fields.Integer(allow_none=True)
    nodes = fields.String()
    tres_req = fields.Dict(keys=fields.String(), values=fields.Integer())
    tres_alloc = fields.Dict(keys=fields.String(), values=fields.Integer())
    exit_code = fields.Integer(allow_none=True)


def job_data(view: JobView) -> dict[str, Any]:
    j = view.job
    return {
        "job_id": j.job_id,
        "name": j.name,
        "user": j.user,
        "account": j.account,
        "project_id": view.project_id,
        "partition": j.partition,
        "qos": j.qos,
        "state": j.state.value,
        "reason": j.reason,
        "submit_time": j.submit_time,
        "start_time": j.start_time,
        "end_time": j.end_time,
        "time_limit_min": j.time_limit_min,
        "nodes": j.nodes,
        "tres_req": dict(j.tres_req.counts),
        "tres_alloc": dict(j.tres_alloc.counts),
        "exit_code": j.exit_code,
    }


class HistoryQuerySchema(Schema):
    project_id = ident(query=True)
    mine = fields.Boolean(metadata={"description": "only the caller's own submissions"})


class JobRecordSchema(Schema):
    id = fields.Integer()
    job_id = fields.Integer()
    user_id = fields.Integer()
    project_id = fields.Integer()
    kind = fields.String(metadata={"description": "form or spec"})
    name = fields.String()
    rerun_of = fields.Integer(allow_none=True)
    submitted_at = fields.DateTime()
    request = fields.Dict(metadata={"description": "the form fields or the job spec sent"})


class MetricsQuerySchema(Schema):
    window = fields.Integer(
        load_default=3600,
        validate=validate.Range(min=60, max=7 * 24 * 3600),
        metadata={"description": "seconds back from now"},
    )


class SampleSchema(Schema):
    ts = fields.Float(metadata={"description": "Unix time"})
    util = fields.Float(metadata={"description": "device utilisation, percent"})


class MetricsSchema(Schema):
    job_id = fields.Integer()
    window = fields.Integer()
    samples = fields.List(fields.Nested(SampleSchema))


class JupyterSchema(Schema):
    ready = fields.Boolean(metadata={"description": "false until the server has started"})
    url = fields.String(allow_none=True)
    host = fields.String(allow_none=True)
    port = fields.Integer(allow_none=True)
    token = fields.String(allow_none=True)
    app = fields.String(allow_none=True)


class JobOutputSchema(Schema):
    job_id = fields.Integer()
    state = fields.String(metadata={"description": "Slurm's state (PENDING, RUNNING …)"})
    label = fields.String(metadata={"description": "the state in the reader's language"})
    active = fields.Boolean(metadata={"description": "still queued or running"})
    tail = fields.String(
        allow_none=True,
        metadata={"description": "the last lines of its output; null for others than its owner"},
    )
    progress = fields.Float(
        allow_none=True, metadata={"description": "the last progress it printed, percent"}
    )
