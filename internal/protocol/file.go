package protocol

import "github.com/agentik/agentik/internal/agent"

// WebSocket ops of files and knowledge bases (docs/PROTOCOL.md, Files and
// knowledge); each is its REST route under /agentik, declared once in the
// server's op table (server/op.go).
const (
	OpUploadFile          = "upload_file"           // POST /files (multipart file, or {name, media_type, data})
	OpListFiles           = "list_files"            // GET /files
	OpGetFile             = "get_file"              // GET /files/{file_id}
	OpDeleteFile          = "delete_file"           // DELETE /files/{file_id}
	OpRetryFile           = "retry_file"            // POST /files/{file_id}/retry
	OpCreateKnowledge     = "create_knowledge"      // POST /knowledge {name, description?, visibility?, file_ids?}
	OpListKnowledge       = "list_knowledge"        // GET /knowledge
	OpGetKnowledge        = "get_knowledge"         // GET /knowledge/{knowledge_id}
	OpUpdateKnowledge     = "update_knowledge"      // PATCH /knowledge/{knowledge_id}
	OpDeleteKnowledge     = "delete_knowledge"      // DELETE /knowledge/{knowledge_id}
	OpAddKnowledgeFile    = "add_knowledge_file"    // POST /knowledge/{knowledge_id}/files {file_id}
	OpRemoveKnowledgeFile = "remove_knowledge_file" // DELETE /knowledge/{knowledge_id}/files/{file_id}
	OpSearchKnowledge     = "search_knowledge"      // POST /knowledge/{knowledge_id}/search {query, limit?}
)

// FilesResult is the result of list_files.
type FilesResult struct {
	Files []agent.File `json:"files"`
}

// KnowledgeListResult is the result of list_knowledge.
type KnowledgeListResult struct {
	Knowledge []agent.Knowledge `json:"knowledge"`
	// KeywordOnly says that retrieval has no embedding model.
	KeywordOnly bool `json:"keyword_only"`
}

// SearchKnowledgeResult is the result of search_knowledge.
type SearchKnowledgeResult struct {
	Results []agent.Passage `json:"results"`
}
