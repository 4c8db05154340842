"""API: submit, list, inspect and cancel jobs."""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Any

from portal.i18n import current
from portal.jobs import explain, history, monitor, service
from portal.jobs.models import JobRecord
from portal.jobs.schemas import (
    HistoryQuerySchema,
    JobOutputSchema,
    JobQuerySchema,
    JobRecordSchema,
    JobSchema,
    JobSubmitSchema,
    JobSubmittedSchema,
    JupyterSchema,
    MetricsQuerySchema,
    MetricsSchema,
    SpecSubmitSchema,
    job_data,
)
from portal.pagination import PageParams, page_of_list
from portal.slurm import slurm
from portal.web import AuthedView, Blueprint, current_access, session

blp = Blueprint("jobs", __name__, url_prefix="/api/v1/jobs", description="Jobs")


@blp.route("")
class Jobs(AuthedView):
    @blp.arguments(JobQuerySchema, location="query")
    @blp.response(200, JobSchema(many=True))
    @blp.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[dict[str, Any]]:
        """The queue, filtered to the jobs the caller may see."""
        views = service.list_jobs(session(), current_access(), slurm(), args)
        return [job_data(v) for v in page_of_list(views, pagination_parameters)]

    @blp.arguments(JobSubmitSchema)
    @blp.response(201, JobSubmittedSchema)
    def post(self, args: dict[str, Any]) -> dict[str, int]:
        """Submit a batch job as the caller, charged to a project.

        Ask for one kind of device at most (``gpus``, ``shards``, ``npus``, ``mlus``, ``dcus`` or
        ``xpus``): 422 otherwise."""
        return {"job_id": service.submit(session(), current_access(), slurm(), args)}


@blp.route("/spec")
class SpecJobs(AuthedView):
    @blp.arguments(SpecSubmitSchema)
    @blp.response(201, JobSubmittedSchema)
    def post(self, args: dict[str, Any]) -> dict[str, int]:
        """Submit a job from a declarative spec as the caller, charged to a project.

        ``spec`` is checked as docs/jobspec.md describes it (its own schema: 422 naming each
        problem)."""
        job_id = service.submit_spec(
            session(), current_access(), slurm(), args["project_id"], args["spec"]
        )
        return {"job_id": job_id}


@blp.route("/<id:job_id>")
class JobById(AuthedView):
    @blp.response(200, JobSchema)
    def get(self, job_id: int) -> dict[str, Any]:
        return job_data(service.get_job(session(), current_access(), slurm(), job_id))

    @blp.response(200, JobSchema)
    def delete(self, job_id: int) -> dict[str, Any]:
        """Cancel the job."""
        return job_data(service.cancel(session(), current_access(), slurm(), job_id))


@blp.route("/history")
class History(AuthedView):
    @blp.arguments(HistoryQuerySchema, location="query")
    @blp.response(200, JobRecordSchema(many=True))
    @blp.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[JobRecord]:
        """Submissions made through the portal: one's own, and a project's with jobs.read_all."""
        return history.history_page(session(), current_access(), args, pagination_parameters)


@blp.route("/<id:job_id>/rerun")
class Rerun(AuthedView):
    @blp.response(201, JobSubmittedSchema)
    def post(self, job_id: int) -> dict[str, int]:
        """Submit one's own job again, as it was asked for, as a new job."""
        return {"job_id": history.rerun(session(), current_access(), slurm(), job_id)}


@blp.route("/<id:job_id>/metrics")
class Metrics(AuthedView):
    @blp.arguments(MetricsQuerySchema, location="query")
    @blp.response(200, MetricsSchema)
    def get(self, args: dict[str, Any], job_id: int) -> dict[str, Any]:
        """Device utilisation samples of the job over the last ``window`` seconds."""
        m = monitor.job_metrics(
            session(), current_access(), slurm(), job_id, window_s=args["window"], clock=time.time
        )
        return {
            "job_id": job_id,
            "window": m.window_s,
            "samples": [{"ts": s.ts, "util": s.util} for s in m.samples],
        }


@blp.route("/<id:job_id>/output")
class JobOutput(AuthedView):
    @blp.response(200, JobOutputSchema)
    def get(self, job_id: int) -> dict[str, Any]:
        """The job's state and, for its owner (and platform admins), the last lines of its
        output and the last progress it printed: what the job's page refreshes in place."""
        access = current_access()
        view = service.get_job(session(), access, slurm(), job_id)
        out = monitor.output(session(), view, access)
        return {
            "job_id": job_id,
            "state": view.job.state.value,
            "label": explain.state_words(view.job.state, current())[0],
            "active": view.job.state.is_active,
            "tail": out.tail if out else None,
            "progress": out.progress if out else None,
        }


@blp.route("/<id:job_id>/jupyter")
class Jupyter(AuthedView):
    @blp.response(200, JupyterSchema)
    def get(self, job_id: int) -> dict[str, Any]:
        """The notebook server of one's own Jupyter job (its URL holds the token)."""
        conn = monitor.jupyter(session(), current_access(), slurm(), job_id)
        if conn is None:
            return {"ready": False}
        return {"ready": True, **asdict(conn)}
