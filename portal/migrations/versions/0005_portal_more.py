"""portal: job history re-runs, metrics, branding

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29 22:45:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "job_records",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("project_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=8), nullable=False),
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("request", sa.JSON(), nullable=False),
        sa.Column("rerun_of", sa.Integer(), nullable=True),
        sa.Column("submitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["project_id"],
            ["projects.id"],
            name=op.f("fk_job_records_project_id_projects"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_job_records_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_job_records")),
    )
    with op.batch_alter_table("job_records", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_job_records_job_id"), ["job_id"], unique=False)
        batch_op.create_index("ix_job_records_project_id_id", ["project_id", "id"], unique=False)
        batch_op.create_index("ix_job_records_user_id_id", ["user_id", "id"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("job_records", schema=None) as batch_op:
        batch_op.drop_index("ix_job_records_user_id_id")
        batch_op.drop_index("ix_job_records_project_id_id")
        batch_op.drop_index(batch_op.f("ix_job_records_job_id"))
    op.drop_table("job_records")
