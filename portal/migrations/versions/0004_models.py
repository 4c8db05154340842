"""model registry, sharing, evaluations, inference services

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 22:45:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "registered_models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=True),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("description", sa.String(length=1000), nullable=False),
        sa.Column("task", sa.String(length=64), nullable=False),
        sa.Column("framework", sa.String(length=64), nullable=False),
        sa.Column("visibility", sa.String(length=16), nullable=False),
        sa.Column("preset", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_registered_models_owner_id_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_registered_models_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_registered_models")),
        sa.UniqueConstraint(
            "project_id", "name", name=op.f("uq_registered_models_project_id_name")
        ),
    )
    with op.batch_alter_table("registered_models", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_registered_models_owner_id"), ["owner_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_registered_models_project_id"), ["project_id"], unique=False
        )

    op.create_table(
        "model_shares",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("grantee_kind", sa.String(length=16), nullable=False),
        sa.Column("grantee_id", sa.Integer(), nullable=False),
        sa.Column("mode", sa.String(length=8), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_model_shares_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["registered_models.id"],
            name=op.f("fk_model_shares_model_id_registered_models"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_shares")),
        sa.UniqueConstraint(
            "model_id",
            "grantee_kind",
            "grantee_id",
            name=op.f("uq_model_shares_model_id_grantee_kind_grantee_id"),
        ),
    )
    with op.batch_alter_table("model_shares", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_model_shares_model_id"), ["model_id"], unique=False)

    op.create_table(
        "model_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("card", sa.Text(), nullable=False),
        sa.Column("card_meta", sa.JSON(), nullable=False),
        sa.Column("input_schema", sa.JSON(), nullable=False),
        sa.Column("output_schema", sa.JSON(), nullable=False),
        sa.Column("files", sa.JSON(), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("parameters", sa.BigInteger(), nullable=True),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("storage", sa.String(length=255), nullable=False),
        sa.Column("encrypted", sa.Boolean(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("dataset_version_id", sa.Integer(), nullable=True),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("workdir", sa.String(length=255), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_model_versions_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["registered_models.id"],
            name=op.f("fk_model_versions_model_id_registered_models"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["model_versions.id"],
            name=op.f("fk_model_versions_parent_id_model_versions"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["dataset_version_id"],
            ["dataset_versions.id"],
            name=op.f("fk_model_versions_dataset_version_id_dataset_versions"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_versions")),
        sa.UniqueConstraint("model_id", "number", name=op.f("uq_model_versions_model_id_number")),
    )
    with op.batch_alter_table("model_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_model_versions_model_id"), ["model_id"], unique=False)

    op.create_table(
        "inference_services",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("owner_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("device", sa.String(length=16), nullable=False),
        sa.Column("gpus", sa.Integer(), nullable=False),
        sa.Column("shards", sa.Integer(), nullable=False),
        sa.Column("replicas", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("token_hint", sa.String(length=16), nullable=False),
        sa.Column("allow_ips", sa.JSON(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("calls", sa.Integer(), nullable=False),
        sa.Column("errors", sa.Integer(), nullable=False),
        sa.Column("workdir", sa.String(length=255), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["owner_id"],
            ["users.id"],
            name=op.f("fk_inference_services_owner_id_users"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_inference_services_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["model_versions.id"],
            name=op.f("fk_inference_services_version_id_model_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inference_services")),
        sa.UniqueConstraint(
            "project_id", "name", name=op.f("uq_inference_services_project_id_name")
        ),
    )
    with op.batch_alter_table("inference_services", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_inference_services_owner_id"), ["owner_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_inference_services_project_id"), ["project_id"], unique=False
        )
        batch_op.create_index(
            batch_op.f("ix_inference_services_version_id"), ["version_id"], unique=False
        )

    op.create_table(
        "model_aliases",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("alias", sa.String(length=64), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["registered_models.id"],
            name=op.f("fk_model_aliases_model_id_registered_models"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["model_versions.id"],
            name=op.f("fk_model_aliases_version_id_model_versions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_aliases")),
        sa.UniqueConstraint("model_id", "alias", name=op.f("uq_model_aliases_model_id_alias")),
    )
    with op.batch_alter_table("model_aliases", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_model_aliases_model_id"), ["model_id"], unique=False)

    op.create_table(
        "model_evaluations",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("dataset", sa.String(length=255), nullable=False),
        sa.Column("dataset_version_id", sa.Integer(), nullable=True),
        sa.Column("metrics", sa.JSON(), nullable=False),
        sa.Column("per_class", sa.JSON(), nullable=False),
        sa.Column("labels", sa.JSON(), nullable=False),
        sa.Column("confusion", sa.JSON(), nullable=False),
        sa.Column("message", sa.String(length=1000), nullable=False),
        sa.Column("workdir", sa.String(length=255), nullable=False),
        sa.Column("created_by", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["created_by"],
            ["users.id"],
            name=op.f("fk_model_evaluations_created_by_users"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["model_versions.id"],
            name=op.f("fk_model_evaluations_version_id_model_versions"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["dataset_version_id"],
            ["dataset_versions.id"],
            name=op.f("fk_model_evaluations_dataset_version_id_dataset_versions"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_model_evaluations")),
    )
    with op.batch_alter_table("model_evaluations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_model_evaluations_version_id"), ["version_id"], unique=False
        )

    op.create_table(
        "inference_replicas",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("service_id", sa.Integer(), nullable=False),
        sa.Column("index", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("url", sa.String(length=255), nullable=True),
        sa.Column("restarts", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["service_id"],
            ["inference_services.id"],
            name=op.f("fk_inference_replicas_service_id_inference_services"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_inference_replicas")),
        sa.UniqueConstraint(
            "service_id", "index", name=op.f("uq_inference_replicas_service_id_index")
        ),
    )
    with op.batch_alter_table("inference_replicas", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_inference_replicas_service_id"), ["service_id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("inference_replicas")
    op.drop_table("model_evaluations")
    op.drop_table("model_aliases")
    op.drop_table("inference_services")
    op.drop_table("model_versions")
    op.drop_table("model_shares")
    op.drop_table("registered_models")
