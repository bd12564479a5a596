"""The real models (lm_support.py): embedded SmolLM2 and Gemma, a llama_cpp.server on loopback."""

from tests.inference.narrative.lm_support import gemma, lm_server, served, smollm2  # noqa: F401
