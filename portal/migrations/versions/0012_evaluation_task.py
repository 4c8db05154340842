"""registry: the task of an evaluation's report (detection, translation, …) on the evaluation
and on the version whose metrics it set (rows from before are classification's, ""), and the
names of the plots the evaluation job drew besides the confusion matrix

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-03 10:00:00

"""

import sqlalchemy as sa
from alembic import op

# revision identifiers, used by Alembic.
revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    for table, column in (("model_evaluations", "task"), ("model_versions", "metrics_task")):
        op.add_column(
            table, sa.Column(column, sa.String(length=64), nullable=False, server_default="")
        )
    op.add_column(
        "model_evaluations", sa.Column("plots", sa.JSON(), nullable=False, server_default="[]")
    )


def downgrade() -> None:
    op.drop_column("model_evaluations", "plots")
    op.drop_column("model_versions", "metrics_task")
    op.drop_column("model_evaluations", "task")
