package llmtest

// WithScript makes fn answer every chat request for which no reply is
// queued, instead of the directives of the package doc.
func WithScript(fn func(Request) Reply) Option {
	return func(s *Server) { s.script = fn }
}
