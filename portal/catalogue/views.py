"""API: the compute catalogue and the measured scores (every signed-in user)."""

from __future__ import annotations

from typing import Any

from portal.catalogue.schemas import CatalogueSchema, catalogue_data
from portal.catalogue.service import read_catalogue
from portal.web import AuthedView, Blueprint

blp = Blueprint("catalogue", __name__, url_prefix="/api/v1", description="Compute catalogue")


@blp.route("/catalogue")
class Catalogue(AuthedView):
    @blp.response(200, CatalogueSchema)
    def get(self) -> dict[str, Any]:
        """Each card model's dense TFLOPS per precision, memory and bandwidth with its public
        source, and each node kind's stored benchmark scores (measured, or the catalogue's
        figure where the cards cannot run the benchmark)."""
        return catalogue_data(read_catalogue())
