"""API: inference services (create, list, edit/scale, start, stop, delete) and the proxied
calls to them (``health``, ``predict``), authenticated by the service's own token."""

from __future__ import annotations

from typing import Any

from flask import jsonify, request
from flask.views import MethodView

from portal.i18n import translate_message
from portal.inference import schemas, service
from portal.inference.models import InferenceService, ServiceState
from portal.pagination import PageParams, page_of_query
from portal.web import AuthedView, Blueprint, current_access, session

blp = Blueprint(
    "inference", __name__, url_prefix="/api/v1/inference", description="Inference services"
)


def service_data(svc: InferenceService, token: str | None = None) -> dict[str, Any]:
    data = {
        "id": svc.id,
        "name": svc.name,
        "version_id": svc.version_id,
        "model_id": svc.version.model_id,
        "version": svc.version.number,
        "project_id": svc.project_id,
        "owner_id": svc.owner_id,
        "state": svc.state,
        "health": svc.health,
        "last_error": svc.last_error,
        "device": svc.device,
        "gpus": svc.gpus,
        "shards": svc.shards,
        "replicas": svc.replicas,
        "ready_replicas": sum(1 for r in svc.replica_rows if r.url),
        "replica_jobs": [
            {
                "index": r.index,
                "job_id": r.job_id,
                "ready": bool(r.url),
                "restarts": r.restarts,
                "failures": r.failures,
                "retry_at": r.retry_at,
                "last_error": r.last_error,
            }
            for r in svc.replica_rows
        ],
        "url": service.service_url(svc),
        "token_hint": svc.token_hint,
        "allow_ips": svc.allow_ips,
        "expires_at": svc.expires_at,
        "calls": svc.calls,
        "errors": svc.errors,
        "created_at": svc.created_at,
        "updated_at": svc.updated_at,
    }
    if token:
        data["token"] = token
    return data


@blp.route("")
class Services(AuthedView):
    @blp.arguments(schemas.ServiceQuerySchema, location="query")
    @blp.response(200, schemas.ServiceSchema(many=True))
    @blp.paginate()
    def get(self, args: dict[str, Any], pagination_parameters: PageParams) -> list[dict[str, Any]]:
        stmt = service.services_query(current_access(), args)
        found = page_of_query(session(), stmt, pagination_parameters)
        return [service_data(s) for s in found]

    @blp.arguments(schemas.ServiceCreateSchema)
    @blp.response(201, schemas.ServiceSchema)
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Deploy a model version in one click: replicas start as Slurm jobs of the caller,
        submitted within seconds by the portal's reconciler."""
        svc, token = service.create(session(), current_access(), args)
        return service_data(svc, token)


@blp.route("/<id:service_id>")
class ServiceById(AuthedView):
    @blp.response(200, schemas.ServiceSchema)
    def get(self, service_id: int) -> dict[str, Any]:
        return service_data(service.get_service(session(), current_access(), service_id))

    @blp.arguments(schemas.ServiceUpdateSchema)
    @blp.response(200, schemas.ServiceSchema)
    def patch(self, args: dict[str, Any], service_id: int) -> dict[str, Any]:
        """Scale (replicas), allow-list, expiry or device."""
        return service_data(service.edit(session(), current_access(), service_id, args))

    @blp.response(204)
    def delete(self, service_id: int) -> None:
        service.delete(session(), current_access(), service_id)


@blp.route("/<id:service_id>/start")
class Start(AuthedView):
    @blp.response(200, schemas.ServiceSchema)
    def post(self, service_id: int) -> dict[str, Any]:
        svc = service.set_state(session(), current_access(), service_id, ServiceState.RUNNING)
        return service_data(svc)


@blp.route("/<id:service_id>/stop")
class Stop(AuthedView):
    @blp.response(200, schemas.ServiceSchema)
    def post(self, service_id: int) -> dict[str, Any]:
        svc = service.set_state(session(), current_access(), service_id, ServiceState.STOPPED)
        return service_data(svc)


@blp.route("/<id:service_id>/token")
class Token(AuthedView):
    @blp.response(201, schemas.ServiceTokenSchema)
    def post(self, service_id: int) -> dict[str, str]:
        """A new token; the old one stops working."""
        return {"token": service.new_token(session(), current_access(), service_id)}


def _proxied(service_id: int, path: str) -> Any:
    token = request.headers.get("X-Service-Token")
    body = request.get_json(silent=True) if path == "predict" else None
    status, payload = service.call(
        session(),
        service_id,
        token=token,
        remote=request.remote_addr,
        path=path,
        body=body,
    )
    if status >= 400 and isinstance(payload, dict) and isinstance(payload.get("message"), str):
        # the replica's refusals are marked in the catalogue: said in the caller's language
        payload = {**payload, "message": translate_message(payload["message"])}
    return jsonify(payload), status


@blp.route("/<id:service_id>/predict")
class Predict(MethodView):
    @blp.doc(security=[{"serviceToken": []}])
    @blp.response(200, {"type": "object"})
    def post(self, service_id: int) -> Any:
        """Call the model (body: its input schema), with the service's X-Service-Token."""
        return _proxied(service_id, "predict")


@blp.route("/<id:service_id>/health")
class Health(MethodView):
    @blp.doc(security=[{"serviceToken": []}])
    @blp.response(200, {"type": "object"})
    def get(self, service_id: int) -> Any:
        """What a ready replica says of its health, with the service's X-Service-Token. It only
        reports: the call is not counted, and a replica that does not answer (502) keeps its
        address until the control daemon reads it again."""
        return _proxied(service_id, "health")
