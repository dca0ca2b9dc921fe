"""An example dp-experts-env plug-in: one private learner (``private-block-ftpl``)."""

__version__ = "0.1.0"
