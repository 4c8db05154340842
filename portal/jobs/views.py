"""API: submit, list, inspect and cancel jobs."""

from __future__ import annotations

from typing import Any

from flask_smorest import Blueprint

from portal.jobs import service
from portal.jobs.schemas import (
    JobQuerySchema,
    JobSchema,
    JobSubmitSchema,
    JobSubmittedSchema,
    SpecSubmitSchema,
    job_data,
)
from portal.pagination import PageParams, page_of_list
from portal.slurm import slurm
from portal.web import AuthedView, current_access, session

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
        """Submit a batch job as the caller, charged to a project."""
        return {"job_id": service.submit(session(), current_access(), slurm(), args)}


@blp.route("/spec")
class SpecJobs(AuthedView):
    @blp.arguments(SpecSubmitSchema)
    @blp.response(201, JobSubmittedSchema)
    def post(self, args: dict[str, Any]) -> dict[str, int]:
        """Submit a job from a declarative spec as the caller, charged to a project."""
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
