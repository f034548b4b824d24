package demo

import (
	"encoding/json"
	"hash/fnv"
	"io"
	"math"
	"net/http"
	"strings"
	"unicode"
)

// EmbeddingModel is the embedding model the endpoint serves.
const EmbeddingModel = "agentik-demo-embed"

// EmbeddingDims is the length of its vectors.
const EmbeddingDims = 256

// Embedding is a deterministic embedding of text: its lowercased words
// hashed into EmbeddingDims buckets, unit length. Texts that share words
// are near; it is what the demo and the test fake (llmtest) answer on
// /v1/embeddings, so the vector path of knowledge search runs without a
// real model.
func Embedding(text string) []float32 { return EmbeddingOf(text, EmbeddingDims) }

// EmbeddingOf is Embedding at dims dimensions (the bench's fake serves
// 768, the size of issue 49's retrieval figures).
func EmbeddingOf(text string, dims int) []float32 {
	v := make([]float32, dims)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		h := fnv.New32a()
		_, _ = h.Write([]byte(w))
		v[h.Sum32()%uint32(dims)]++
	}
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n > 0 {
		inv := float32(1 / math.Sqrt(n))
		for i := range v {
			v[i] *= inv
		}
	}
	return v
}

// ServeEmbeddings answers POST /v1/embeddings: input a string or a list
// of strings.
func ServeEmbeddings(w http.ResponseWriter, r *http.Request) { EmbeddingsHandler(EmbeddingDims)(w, r) }

// EmbeddingsHandler answers POST /v1/embeddings with EmbeddingOf at dims.
func EmbeddingsHandler(dims int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { serveEmbeddings(w, r, dims) }
}

func serveEmbeddings(w http.ResponseWriter, r *http.Request, dims int) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "the body must be a JSON object: "+err.Error())
		return
	}
	var inputs []string
	var one string
	if json.Unmarshal(req.Input, &one) == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(req.Input, &inputs); err != nil {
		writeError(w, http.StatusBadRequest, "input must be a string or a list of strings")
		return
	}
	type datum struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]datum, len(inputs))
	words := 0
	for i, in := range inputs {
		data[i] = datum{Object: "embedding", Index: i, Embedding: EmbeddingOf(in, dims)}
		words += len(strings.Fields(in))
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data, "model": req.Model,
		"usage": map[string]int{"prompt_tokens": words, "total_tokens": words}})
}
