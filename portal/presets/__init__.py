"""Preset models: 20 definitions (cards, I/O schemas, job templates) and the programs that
fine-tune, evaluate and serve the ones that run here (:mod:`portal.presets.runtime`)."""
