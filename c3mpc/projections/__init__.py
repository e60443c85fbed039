"""Projection methods of C3 (seed 003 §V-B)."""

from .base import Projection, ProjectionData, ProjectionResult, ProjectionStatus

__all__ = ["Projection", "ProjectionData", "ProjectionResult", "ProjectionStatus"]
