"""Labelling: annotate a dataset version's images, review, export to COCO, YOLO and VOC."""
