// Package llmtest is a fake OpenAI-compatible chat completions server that
// speaks real server-sent events over HTTP. The runner tests, the REST and
// WebSocket end-to-end tests, the browser tests and the benchmark command
// all talk to it through the real model adapter (internal/llm), so they
// exercise the same wire format as a real endpoint.
//
// Start one in a test with NewHTTPServer, which returns the base URL to put
// in llm.Config.BaseURL (or OPENAI_BASE_URL):
//
//	fake, baseURL := llmtest.NewHTTPServer(t)
//	fake.Enqueue(llmtest.Reply{Text: "Hello there", Reasoning: "greet"})
//	// … run a turn …
//	got := fake.Requests()[0].Messages
//
// Outside tests, serve NewServer() with any http.Server.
//
// # Routes
//
//	POST /v1/chat/completions, /chat/completions   streamed (or plain JSON with "stream": false)
//	GET  /v1/models, /models                       the models of WithModels (default "fake-model")
//	GET  /api/tags                                 the same list, shaped like Ollama's
//
// # Scripted replies
//
// Every chat request consumes the next Reply queued with Enqueue. A Reply
// says what to stream (reasoning in any of the three dialects, text, tool
// calls), how (chunk size, delay, arguments split over chunks, Ollama-style
// index 0 for parallel calls), and how to fail (an error status with an
// OpenAI-style body and Retry-After, a connection cut mid-stream, a Hold
// channel that keeps the stream open until the test closes it).
//
// A stream is: a role chunk, the reasoning chunks, the text chunks, the
// tool call chunks, a chunk with finish_reason ("stop" or "tool_calls"),
// a usage chunk when the request set stream_options.include_usage, and
// data: [DONE].
//
// # Directives
//
// When the queue is empty, the reply is derived from the text of the LAST
// user message, so that end-to-end and browser tests can script the model
// by what they type. Plain text is echoed word by word:
//
//	hello world            →  "You said: hello world"
//
// Directives in double brackets change the reply; they combine, in one
// bracket or several, and are removed from the echoed text:
//
//	[[tokens=N]]           answer N words "t1 t2 … tN" (one chunk each)
//	[[text=…]]             answer exactly … (up to "]]"; e.g. an XSS payload)
//	[[system]]             answer the request's (first) system prompt: which
//	                       agent's instructions the model was given
//	[[delay=20ms]]         sleep between chunks (a time.ParseDuration value)
//	[[wait=1.5s]]          sleep before answering at all (before the headers)
//	[[chunk=N]]            N runes per chunk instead of word by word
//	[[reasoning]]          stream "Thinking about: <text>" as reasoning first;
//	[[reasoning=F]]        … in field F: reasoning_content (default),
//	                       reasoning, or think (inline <think>…</think>)
//	[[tool=NAME args=JSON]]
//	                       first round: call tool NAME with arguments JSON
//	                       (default {}); several tool directives make parallel
//	                       calls. Once the request holds a result for every
//	                       such tool (a role "tool" message after the last user
//	                       message), answer "tool said: <result>", one line
//	                       per tool.
//	[[split]]              stream tool arguments over several chunks
//	[[error=500]]          answer that status (400–599) with an error body;
//	                       every retry gets it again
//	[[cut]]                abort the connection halfway through the stream,
//	                       without finish_reason or [DONE]
//
// An unknown or malformed directive answers 400 with a message naming it.
//
// # Scripts
//
// WithScript replaces the directives with a function of the request.
// (`agentik --demo` has its own scripted endpoint, internal/llm/demo, so
// the binary does not link this fake.)
//
// Usage is counted when not scripted: prompt tokens are the words of all
// request messages, completion tokens the content chunks of the answer.
package llmtest
