"""Pseudospectral collocation: LG and the second-order LG2 of MorenoMartin2022, any RobotModel, IPOPT through CasADi."""

from .dynamics import SecondOrderDynamics
from .legendre import (
    Interpolant,
    differentiation_matrix,
    gauss_points,
    interpolation_matrix,
    lg2_differentiation,
    lg2_nodes,
    lg_differentiation,
    lg_nodes,
)
from .solution import CollocationSolution
from .transcription import METHODS, CollocationProblem, Guess, Transcription

__all__ = [
    "SecondOrderDynamics",
    "Interpolant",
    "differentiation_matrix",
    "gauss_points",
    "interpolation_matrix",
    "lg2_differentiation",
    "lg2_nodes",
    "lg_differentiation",
    "lg_nodes",
    "CollocationSolution",
    "METHODS",
    "CollocationProblem",
    "Guess",
    "Transcription",
]
