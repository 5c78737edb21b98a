"""Calling models over the OpenAI-compatible chat-completions protocol.

``client`` and ``cache`` are pure Python (no Django) and usable from scripts; ``services``,
``selectors`` and ``tasks`` connect them to projects, items, jobs and the ModelCall table."""

from benchmark.llm.cache import CachedAnswer, DiskCache, MemoryCache, ResponseCache, request_key
from benchmark.llm.client import (
    CACHE_MODES,
    CacheMiss,
    ChatClient,
    ChatRequest,
    ChatResult,
    ConversationRequest,
    ImageInput,
    ModelCallFailed,
    ModelConfig,
    ModelError,
    ModelNotConfigured,
    RateGate,
    endpoint_gate,
    image_mime,
)

__all__ = [
    "CACHE_MODES",
    "CacheMiss",
    "CachedAnswer",
    "ChatClient",
    "ChatRequest",
    "ChatResult",
    "ConversationRequest",
    "DiskCache",
    "ImageInput",
    "MemoryCache",
    "ModelCallFailed",
    "ModelConfig",
    "ModelError",
    "ModelNotConfigured",
    "RateGate",
    "ResponseCache",
    "endpoint_gate",
    "image_mime",
    "request_key",
]
