"""What the model pages call the registry's values, in words: statuses, sources, visibility,
access levels, shares, tasks and metrics. Values not listed are shown as they are."""

from __future__ import annotations

from collections.abc import Mapping

from portal.i18n import gettext
from translations import N_

VISIBILITY = {
    "private": N_("Private (the owner and the project's managers)"),
    "project": N_("Project (everyone who can read the project)"),
    "domain": N_("Domain (everyone in the project's domain)"),
    "public": N_("Public (every user of the portal)"),
}
VISIBILITY_SHORT = {
    "private": N_("Private"),
    "project": N_("Project"),
    "domain": N_("Domain"),
    "public": N_("Public"),
}
STATUS = {
    "training": N_("Training"),
    "ready": N_("Ready"),
    "staging": N_("Staging"),
    "production": N_("Production"),
    "archived": N_("Archived"),
    "failed": N_("Failed"),
}
SOURCE = {
    "upload": N_("Upload"),
    "job": N_("Training job"),
    "huggingface": N_("Hugging Face layout"),
    "modelscope": N_("ModelScope layout"),
    "preset": N_("Preset"),
}
LEVEL = {
    "read": N_("Read"),
    "write": N_("Read and write"),
    "admin": N_("Administer"),
}
GRANTEE = {"user": N_("User"), "project": N_("Project"), "domain": N_("Domain")}
SHARE_MODE = {"read": N_("Read"), "write": N_("Read and write")}
EVALUATION = {"queued": N_("Queued"), "succeeded": N_("Succeeded"), "failed": N_("Failed")}
# Hugging Face pipeline tags, as Chinese AI platforms name the tasks
TASK = {
    "image-classification": N_("Image classification"),
    "image-retrieval": N_("Image retrieval"),
    "object-detection": N_("Object detection"),
    "image-segmentation": N_("Image segmentation"),
    "image-to-image": N_("Image to image"),
    "image-inpainting": N_("Image inpainting"),
    "text-to-image": N_("Text to image"),
    "depth-estimation": N_("Depth estimation"),
    "text-classification": N_("Text classification"),
    "token-classification": N_("Token classification"),
    "feature-extraction": N_("Feature extraction"),
    "keyword-extraction": N_("Keyword extraction"),
    "summarization": N_("Summarisation"),
    "translation": N_("Translation"),
    "question-answering": N_("Question answering"),
    "text-generation": N_("Text generation"),
}
# how a model job ended, as a person says it (Slurm's states, in words)
JOB_END = {
    "COMPLETED": N_("completed without a result"),
    "FAILED": N_("failed"),
    "CANCELLED": N_("was cancelled"),
    "TIMEOUT": N_("reached its time limit"),
    "OUT_OF_MEMORY": N_("ran out of memory"),
    "NODE_FAIL": N_("stopped because its node failed"),
    "BOOT_FAIL": N_("could not start because its node did not boot"),
    "PREEMPTED": N_("was preempted by a job of higher priority"),
    "DEADLINE": N_("passed its deadline"),
}
MODALITY = {"image": N_("Image"), "language": N_("Language")}
# each metric by its name in words and the abbreviation people know it by
METRICS = {
    "accuracy": (N_("Accuracy"), "ACC"),
    "f1": (N_("F1 score"), "F1"),
    "precision": (N_("Precision"), "P"),
    "recall": (N_("Recall"), "R"),
}
# the keys of a model card's YAML header that hubs use
CARD_META = {
    "license": N_("Licence"),
    "pipeline_tag": N_("Task"),
    "library_name": N_("Framework"),
    "tags": N_("Tags"),
    "base_model": N_("Base model"),
    "language": N_("Languages"),
    "datasets": N_("Datasets"),
    "metrics": N_("Metrics"),
}
PER_CLASS = {
    "precision": N_("Precision"),
    "recall": N_("Recall"),
    "f1": N_("F1 score"),
    "support": N_("Samples"),
}


def _say(table: Mapping[str, str], value: str | None) -> str:
    if not value:
        return ""
    return gettext(table[value]) if value in table else value


def visibility(value: str, short: bool = True) -> str:
    return _say(VISIBILITY_SHORT if short else VISIBILITY, value)


def status(value: str) -> str:
    return _say(STATUS, value)


def source(value: str) -> str:
    return _say(SOURCE, value)


def level(value: str) -> str:
    return _say(LEVEL, value)


def grantee(value: str) -> str:
    return _say(GRANTEE, value)


def share_mode(value: str) -> str:
    return _say(SHARE_MODE, value)


def evaluation(value: str) -> str:
    return _say(EVALUATION, value)


def job_end(job_id: int | None, state: str, exit_code: int | None, output: str) -> str:
    """Why a model job gave nothing, in the site's language (the daemon writes it)."""
    how = gettext(JOB_END[state]) if state in JOB_END else state
    if exit_code is None:
        said = gettext("Job %(job)s %(how)s.", job=job_id, how=how)
    else:
        said = gettext(
            "Job %(job)s %(how)s (exit code %(code)d).", job=job_id, how=how, code=exit_code
        )
    if not output:
        return gettext("%(said)s It left no output.", said=said)
    return gettext("%(said)s Its last output: %(output)s", said=said, output=output)


def task(value: str) -> str:
    return _say(TASK, value)


def modality(value: str) -> str:
    return _say(MODALITY, value)


def metric(name: str) -> str:
    """``准确率 ACC`` / ``Accuracy (ACC)``: the name in words and its abbreviation."""
    if name not in METRICS:
        return name
    words, short = METRICS[name]
    return gettext("%(name)s (%(short)s)", name=gettext(words), short=short)


def card_key(name: str) -> str:
    return _say(CARD_META, name)


def card_value(key: str, value: object) -> str:
    """A card header's value as text: lists joined, a task in words."""
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if key == "pipeline_tag" and isinstance(value, str):
        return task(value)
    return "" if value is None else str(value)


def per_class(name: str) -> str:
    return _say(PER_CLASS, name)
