"""Test-suite configuration.

Hypothesis runs derandomized by default, so every run (and CI) draws the same examples: a
failure is reproducible and never depends on the day. ``HYPOTHESIS_PROFILE=explore`` searches
with fresh random draws (and more examples) when hunting for new counterexamples.
"""

import os

from hypothesis import settings

settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False, max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
