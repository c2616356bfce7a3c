"""The model side of the loop: the OpenAI-compatible client, model profiles, prices,
token budgets and the local model that comes with the install."""

from evolve.llm.client import LLMClient, LLMConfig, LLMError, LLMReply, ModelSpec

__all__ = ["LLMClient", "LLMConfig", "LLMError", "LLMReply", "ModelSpec"]
