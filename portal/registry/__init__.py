"""The model registry: registered models, versions, cards, sharing, artifacts, evaluations."""
