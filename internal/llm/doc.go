// Package llm adapts OpenAI-compatible chat completion endpoints (OpenAI,
// Ollama, llama.cpp, vLLM, LM Studio, DeepSeek, OpenRouter) to agent.Model,
// using github.com/sashabaranov/go-openai for requests, HTTP and SSE framing.
//
// # Streaming
//
// Every call streams, with tools and stream_options.include_usage; the
// usage of the final chunk becomes ChatResponse.Usage. Chunks are read raw
// from go-openai (ChatCompletionStream.RecvRaw) and decoded here, because
// go-openai's chunk type knows reasoning_content but not reasoning. That
// keeps go-openai's request building, error bodies and SSE parsing, with
// no second SSE parser and no rewriting of response bodies.
//
// Reasoning is accepted in all three dialects: the reasoning_content field
// (DeepSeek, llama.cpp, LM Studio), the reasoning field (Ollama, vLLM,
// OpenRouter), and <think>…</think> opening the content (tags may be split
// anywhere across chunks). Deltas reach the caller in arrival order.
// Reasoning goes back to the server as reasoning_content on the assistant
// messages of the current turn (after the last user message), where
// thinking models with tools need it; older reasoning is not resent.
//
// Streamed tool calls are accumulated by (index, id): a new id at an index
// starts a new call, since Ollama streams parallel calls all at index 0.
// Calls without an id get a generated one; empty arguments become "{}".
//
// # Failures
//
// Before the first delta, 429, 5xx, refused or broken connections and a
// silent server are retried with exponential backoff and jitter: at most 3
// attempts within 10 s, honouring Retry-After when it fits. After the
// first delta nothing is retried. Failures are *agent.Error with code
// model_error and a message such as "model: 429 Too Many Requests: <upstream
// message>", with the API key, sk-… keys and bearer tokens redacted, and
// without retry or timeout noise. A stream that ends before
// any choice carried a finish_reason (go-openai reports [DONE] and a bare
// EOF alike) is a model_error too, returned with the partial response. A
// done ctx returns ctx.Err() and the partial response.
//
// Config.Timeout caps a whole call (default 10 min); Config.IdleTimeout
// caps the wait for the first byte and between reads (default 60 s).
//
// Config's String and LogValue never show the API key.
//
// Detect picks the endpoint from the environment (OPENAI_BASE_URL,
// OPENAI_API_KEY, OPENAI_MODEL) or a local Ollama server.
package llm
