"""API: alert rules and channels of the caller's scopes, and their recent deliveries."""

from __future__ import annotations

from typing import Any

from portal.alerts import service
from portal.alerts.schemas import (
    ChannelIn,
    ChannelOut,
    DeliveryOut,
    DeliveryQuery,
    RuleIn,
    RuleOut,
)
from portal.web import AuthedView, Blueprint, current_access, session

blp = Blueprint("alerts", __name__, url_prefix="/api/v1/alerts", description="Alerts")


@blp.route("/rules")
class Rules(AuthedView):
    @blp.response(200, RuleOut(many=True))
    def get(self) -> list[dict[str, Any]]:
        """The rules of the caller's scopes, each with its state per subject."""
        return service.rules(session(), current_access())

    @blp.arguments(RuleIn)
    @blp.response(201, RuleOut)
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Make a rule (platform admins: any scope; tenant admins: their own tenants).

        422 also for what the schema cannot say: a usage query needs its ``measure`` (and a
        budget for ``card_hours_share``), a metric query its ``promql``; pools and metrics
        have the platform's scope, card-hours a tenant's; every channel must exist."""
        return service.save_rule(session(), current_access(), args)


@blp.route("/rules/<string:name>")
class OneRule(AuthedView):
    @blp.response(200, RuleOut)
    def get(self, name: str) -> dict[str, Any]:
        return service.rule(session(), current_access(), name)

    @blp.arguments(RuleIn)
    @blp.response(200, RuleOut)
    def put(self, args: dict[str, Any], name: str) -> dict[str, Any]:
        """Replace a rule (same name).

        422 also for what the schema cannot say: a usage query needs its ``measure`` (and a
        budget for ``card_hours_share``), a metric query its ``promql``; pools and metrics
        have the platform's scope, card-hours a tenant's; every channel must exist."""
        return service.save_rule(session(), current_access(), args, name)

    @blp.response(204)
    def delete(self, name: str) -> None:
        service.delete_rule(session(), current_access(), name)


@blp.route("/channels")
class Channels(AuthedView):
    @blp.response(200, ChannelOut(many=True))
    def get(self) -> list[dict[str, Any]]:
        """The channels of the caller's scopes; URLs and secrets masked."""
        return service.channels(session(), current_access())

    @blp.arguments(ChannelIn)
    @blp.response(201, ChannelOut)
    def post(self, args: dict[str, Any]) -> dict[str, Any]:
        """Make a channel: e-mail, a JSON webhook, or a WeCom, DingTalk or Feishu robot.

        422 also for what the schema cannot say: e-mail takes recipients or roles and no URL;
        a webhook needs its URL; only DingTalk and Feishu take a signing secret."""
        return service.create_channel(session(), current_access(), args)


@blp.route("/channels/<string:name>")
class OneChannel(AuthedView):
    @blp.response(204)
    def delete(self, name: str) -> None:
        """Delete a channel no rule uses."""
        service.delete_channel(session(), current_access(), name)


@blp.route("/deliveries")
class Deliveries(AuthedView):
    @blp.arguments(DeliveryQuery, location="query")
    @blp.response(200, DeliveryOut(many=True))
    def get(self, args: dict[str, Any]) -> list[Any]:
        """The latest delivery attempts about the caller's tenants, newest first."""
        return service.deliveries(session(), current_access(), args["limit"])
