"""The audit log in words, in the reader's language: what each action did, what kind of
object it concerned, and the names of the fields its snapshots hold. Actions the portal does
not know yet (a newer package's) are shown by their code."""

from __future__ import annotations

from portal.i18n import gettext
from translations import N_

ACTIONS: dict[str, str] = {
    "user.create": N_("Created a user"),
    "user.update": N_("Changed a user"),
    "user.password_change": N_("Changed their own password"),
    "user.password_reset": N_("Reset a user's password"),
    "token.create": N_("Created an API token"),
    "token.revoke": N_("Revoked an API token"),
    "role.create": N_("Created a role"),
    "role.update": N_("Changed a role"),
    "role.delete": N_("Deleted a role"),
    "domain.create": N_("Created a domain"),
    "domain.update": N_("Changed a domain"),
    "domain.delete": N_("Deleted a domain"),
    "domain_admin.add": N_("Made a user a domain admin"),
    "domain_admin.remove": N_("Removed a domain admin"),
    "project.create": N_("Created a project"),
    "project.update": N_("Changed a project"),
    "project.delete": N_("Deleted a project"),
    "member.add": N_("Added a project member"),
    "member.update": N_("Changed a member's role"),
    "member.remove": N_("Removed a project member"),
    "group.create": N_("Created a user group"),
    "group.update": N_("Changed a user group"),
    "group.delete": N_("Deleted a user group"),
    "group.member_add": N_("Added a user to a group"),
    "group.member_remove": N_("Removed a user from a group"),
    "group.grant": N_("Gave a group a role on a project"),
    "group.revoke": N_("Took back a group's role on a project"),
    "quota.domain": N_("Set a domain's quota"),
    "quota.project": N_("Set a project's quota"),
    "slurm.sync": N_("Brought Slurm's accounts up to date"),
    "slurm.policy": N_("Installed the admission policy"),
    "job.submit": N_("Submitted a job"),
    "job.cancel": N_("Cancelled a job"),
    "dataset.create": N_("Created a dataset"),
    "dataset.update": N_("Changed a dataset"),
    "dataset.delete": N_("Deleted a dataset"),
    "dataset.version": N_("Added a dataset version"),
    "dataset.export": N_("Exported a dataset"),
    "model.create": N_("Registered a model"),
    "model.update": N_("Changed a model"),
    "model.delete": N_("Deleted a model"),
    "model.version.create": N_("Added a model version"),
    "model.version.update": N_("Changed a model version"),
    "model.version.delete": N_("Deleted a model version"),
    "model.alias.set": N_("Set a model alias"),
    "model.alias.delete": N_("Removed a model alias"),
    "model.share": N_("Shared a model"),
    "model.unshare": N_("Stopped sharing a model"),
    "model.evaluate": N_("Started a model evaluation"),
    "inference.create": N_("Created an inference service"),
    "inference.update": N_("Changed an inference service"),
    "inference.delete": N_("Deleted an inference service"),
    "inference.start": N_("Started an inference service"),
    "inference.stop": N_("Stopped an inference service"),
    "inference.token": N_("Made a new key for an inference service"),
    "labelset.create": N_("Created a label set"),
    "labelset.update": N_("Changed a label set"),
    "labeltask.create": N_("Created a labelling task"),
    "labelitem.annotate": N_("Annotated an item"),
    "labelitem.accept": N_("Accepted an annotation"),
    "labelitem.reject": N_("Rejected an annotation"),
    "billing.plan": N_("Saved a price plan"),
    "billing.account_open": N_("Opened a billing account"),
    "billing.account_change": N_("Changed a billing account"),
    "billing.topup": N_("Topped up a balance"),
    "billing.bill": N_("Issued a bill"),
    "usage.import": N_("Imported usage from Slurm"),
    "alert_rule.save": N_("Saved an alert rule"),
    "alert_rule.delete": N_("Deleted an alert rule"),
    "alert_channel.create": N_("Created an alert channel"),
    "alert_channel.delete": N_("Deleted an alert channel"),
}

TARGETS: dict[str, str] = {
    "user": N_("User"),
    "api_token": N_("API token"),
    "role": N_("Role"),
    "domain": N_("Domain"),
    "domain_admin": N_("Domain admin"),
    "project": N_("Project"),
    "membership": N_("Project member"),
    "group": N_("User group"),
    "slurm": N_("Slurm"),
    "job": N_("Job"),
    "dataset": N_("Dataset"),
    "model": N_("Model"),
    "inference_service": N_("Inference service"),
    "label_set": N_("Label set"),
    "label_task": N_("Labelling task"),
    "label_item": N_("Labelling item"),
    "billing_account": N_("Billing account"),
    "price_plan": N_("Price plan"),
    "usage": N_("Usage"),
    "alert_rule": N_("Alert rule"),
    "alert_channel": N_("Alert channel"),
}

FIELDS: dict[str, str] = {
    "name": N_("name"),
    "username": N_("user name"),
    "display_name": N_("full name"),
    "email": N_("e-mail"),
    "description": N_("description"),
    "active": N_("active"),
    "is_platform_admin": N_("platform admin"),
    "permissions": N_("permissions"),
    "user_id": N_("user"),
    "project_id": N_("project"),
    "domain_id": N_("domain"),
    "role_id": N_("role"),
    "group_id": N_("user group"),
    "gpus": N_("GPU cards"),
    "shards": N_("GPU shards"),
    "npus": N_("NPUs"),
    "cpus": N_("CPUs"),
    "qos": N_("priorities (QOS)"),
    "commands": N_("Slurm commands"),
    "digest": N_("policy"),
    "changed": N_("files written"),
    "state": N_("state"),
    "account": N_("account"),
    "balance": N_("balance"),
    "amount": N_("amount"),
    "note": N_("note"),
    "month": N_("month"),
    "visibility": N_("visibility"),
    "prefix": N_("prefix"),
    "severity": N_("severity"),
    "channels": N_("channels"),
    "threshold": N_("threshold"),
    "comparator": N_("comparison"),
    "query": N_("query"),
    "scope": N_("scope"),
    "for": N_("lasting"),
    "type": N_("type"),
    "recipients": N_("recipients"),
    "urgent": N_("urgent"),
}

#: Recorded values that are words of a fixed set, by field: shown in the reader's language.
VALUES: dict[str, dict[str, str]] = {
    "severity": {"urgent": N_("urgent"), "normal": N_("normal")},
}

#: The Slurm objects of ``slurm.*`` events, by their target id.
SLURM_TARGETS = {"accounts": N_("Slurm accounts"), "admission": N_("admission policy")}


def action_text(action: str) -> str:
    """What an action did, in words; its code where the portal does not know it."""
    return gettext(ACTIONS[action]) if action in ACTIONS else action


def target_text(target_type: str) -> str:
    return gettext(TARGETS[target_type]) if target_type in TARGETS else target_type


def field_text(key: str) -> str:
    return gettext(FIELDS[key]) if key in FIELDS else key


def value_text(key: str, value: str) -> str | None:
    """A recorded word of a fixed set in the reader's language; None for other values."""
    words = VALUES.get(key, {})
    return gettext(words[value]) if value in words else None


def known_actions() -> list[tuple[str, str]]:
    """Every action the portal records, in words, in the order of the list above."""
    return [(code, gettext(text)) for code, text in ACTIONS.items()]


def known_targets() -> list[tuple[str, str]]:
    return [(code, gettext(text)) for code, text in TARGETS.items()]
