package server

import "net/http"

// handleCompact summarizes a conversation's earlier turns now: 200 with
// {"compacted":true,"message":summary_message}, or {"compacted":false,
// "reason"} when there is nothing to compact; a temp conversation is 400,
// an unknown one 404, a running one 409 busy.
func (s *Server) handleCompact(w http.ResponseWriter, r *http.Request) {
	res, err := s.runner.Compact(r.Context(), r.PathValue("id"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
