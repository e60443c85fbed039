"""Test-suite configuration.

Hypothesis runs derandomized by default, so every run (and CI) draws the same examples: a
failure is reproducible and never depends on the day. ``HYPOTHESIS_PROFILE=explore`` searches
with fresh random draws (and more examples) when hunting for new counterexamples.
"""

import os

import pytest
from hypothesis import settings

settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture(scope="session")
def a1_impact_step():
    """The contact problem of ``a1-drop-8`` after 110 SAP steps at 1/240 s (an impact step: 8 A1s,
    144 dofs, 67 robot–ground contacts, 8 islands), built once per test session. Solvers do not
    modify their problem. One contact point per pair (``max_contacts_per_pair=1``, the detector
    before box manifolds): the step the solver tests were measured on (with the trunk and leg
    boxes' manifolds the same step has other, more redundant contacts, on which SubADMM's body
    variant needs more than 2000 iterations to reach 1e-9)."""
    from plants.sim import load_scene

    sim = load_scene("a1-drop-8", solver="sap", max_contacts_per_pair=1)
    for _ in range(110):
        sim.step()
    return sim.contact_problem()[0]
