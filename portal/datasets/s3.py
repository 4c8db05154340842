"""S3-compatible object stores as a dataset source and export target (boto3).

Stores are named in the portal's settings (``DATASET_S3_STORES``: endpoint, region and
optionally the site's credentials), so a user names a store, never an arbitrary endpoint the
portal would connect to. A request may carry its own access key for its own bucket.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from portal.datasets.storage import Budget, Manifest, safe_relpath, write_stream
from portal.errors import ValidationFailed
from portal.i18n import gettext


def client(stores: Mapping[str, Mapping[str, Any]], args: Mapping[str, Any]) -> Any:
    name = args["store"]
    store = stores.get(name)
    if store is None:
        known = ", ".join(sorted(stores)) or gettext("none configured")
        message = gettext(
            "There is no store named %(name)s (known: %(known)s).", name=name, known=known
        )
        raise ValidationFailed({"store": [message]})
    access = args.get("access_key") or store.get("access_key")
    secret = args.get("secret_key") or store.get("secret_key")
    return boto3.client(
        "s3",
        endpoint_url=store["endpoint_url"],
        region_name=store.get("region", "us-east-1"),
        aws_access_key_id=access,
        aws_secret_access_key=secret,
        config=Config(
            connect_timeout=5, read_timeout=60, retries={"max_attempts": 2, "mode": "standard"}
        ),
    )


def _fail(exc: Exception, bucket: str) -> ValidationFailed:
    if isinstance(exc, ClientError):
        err = exc.response.get("Error", {})
        said = f"{err.get('Code', 'error')}: {err.get('Message', '')}".strip()
        message = gettext("The store refused bucket %(bucket)s: %(said)s", bucket=bucket, said=said)
        return ValidationFailed({"bucket": [message]})
    message = gettext("The object store cannot be reached: %(reason)s", reason=exc)
    return ValidationFailed({"store": [message]})


def download(s3: Any, bucket: str, prefix: str, dest: Path, budget: Budget) -> int:
    """Copy every object under ``prefix`` into ``dest``; the number of objects copied."""
    start = prefix.rstrip("/") + "/" if prefix else ""
    count = 0
    try:
        pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=start)
        for page in pages:
            for obj in page.get("Contents", []):
                key: str = obj["Key"]
                if key.endswith("/"):
                    continue  # a "folder" marker
                rel = safe_relpath(key[len(start) :], "prefix")
                budget.new_file(rel, int(obj["Size"]))
                body = s3.get_object(Bucket=bucket, Key=key)["Body"]
                try:
                    write_stream(body, dest, rel, budget)
                finally:
                    body.close()
                count += 1
    except (ClientError, BotoCoreError) as exc:
        raise _fail(exc, bucket) from None
    if count == 0:
        where = f"s3://{bucket}/{start}"
        message = gettext("There are no objects under %(url)s.", url=where)
        raise ValidationFailed({"prefix": [message]})
    return count


def upload(s3: Any, bucket: str, prefix: str, directory: Path, manifest: Manifest) -> list[str]:
    """Put a version's files under ``prefix``; the keys written."""
    start = prefix.strip("/") + "/" if prefix.strip("/") else ""
    keys = []
    try:
        for e in manifest.entries:
            key = start + e.path
            with (directory / e.path).open("rb") as f:
                s3.put_object(Bucket=bucket, Key=key, Body=f, Metadata={"sha256": e.sha256})
            keys.append(key)
    except (ClientError, BotoCoreError) as exc:
        raise _fail(exc, bucket) from None
    return keys
