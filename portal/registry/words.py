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
# each metric by its name in words and the abbreviation people know it by (None: the name is
# what people know it by); the order is the order of a table's columns
METRICS: dict[str, tuple[str, str | None]] = {
    "accuracy": (N_("Accuracy"), "ACC"),
    "f1": (N_("F1 score"), "F1"),
    "precision": (N_("Precision"), "P"),
    "recall": (N_("Recall"), "R"),
    "map": (N_("Mean average precision"), "mAP"),
    "map_50": (N_("Mean average precision at IoU 0.5"), "mAP@50"),
    "map_75": (N_("Mean average precision at IoU 0.75"), "mAP@75"),
    "ap": (N_("Average precision"), "AP"),
    "miou": (N_("Mean intersection over union"), "mIoU"),
    "iou": (N_("Intersection over union"), "IoU"),
    "pixel_accuracy": (N_("Pixel accuracy"), "PA"),
    "abs_rel": (N_("Absolute relative error"), "AbsRel"),
    "rmse": (N_("Root mean square error"), "RMSE"),
    "delta1": (N_("Share of pixels within 1.25 of the truth"), "δ1"),
    "psnr": (N_("Peak signal-to-noise ratio"), "PSNR"),
    "ssim": (N_("Structural similarity"), "SSIM"),
    "lpips": (N_("Learned perceptual image patch similarity"), "LPIPS"),
    "clip_score": (N_("Image-text similarity"), "CLIP score"),
    "fid": (N_("Fréchet inception distance"), "FID"),
    "bleu": (N_("BLEU score"), None),
    "chrf": (N_("Character n-gram F-score"), "chrF"),
    "rouge1": (N_("Word overlap"), "ROUGE-1"),
    "rouge2": (N_("Word-pair overlap"), "ROUGE-2"),
    "rougeL": (N_("Longest common subsequence"), "ROUGE-L"),
    "rougeLsum": (N_("Longest common subsequence per sentence"), "ROUGE-Lsum"),
    "exact_match": (N_("Exact match"), "EM"),
    "perplexity": (N_("Perplexity"), "PPL"),
    "recall_at_1": (N_("Recall at 1"), "R@1"),
    "recall_at_5": (N_("Recall at 5"), "R@5"),
    "mrr": (N_("Mean reciprocal rank"), "MRR"),
    "latency_ms": (N_("Latency in milliseconds"), "ms"),
    "samples": (N_("Samples"), None),
    "support": (N_("Samples"), None),
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
    """``准确率 ACC`` / ``Accuracy (ACC)``: the name in words and its abbreviation; a name
    outside the vocabulary as it is."""
    if name not in METRICS:
        return name
    words, short = METRICS[name]
    if short is None:
        return gettext(words)
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
    """A per-class table's column: the short words of classification's, else the metric's."""
    return _say(PER_CLASS, name) if name in PER_CLASS else metric(name)
