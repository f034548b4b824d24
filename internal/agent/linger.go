package agent

import "time"

// paceWindow is how many of a stream's latest pieces pace judges its
// rate by.
const paceWindow = 8

// pace decides whether a streamed piece of text lingers (up to textLinger)
// for more text to join it. It lingers only while pieces arrive faster
// than a frame can show them: the latest paceWindow pieces came less than
// textLinger apart on average. Then joining them costs the reader nothing
// and saves events. A slower stream (50 tokens/s: 20 ms apart) never
// lingers, so each token goes out at once, also when a stall delivers a
// few of its tokens together: judged by one gap, as pace did before, the
// last of such a burst waited the whole textLinger for a token due 20 ms
// later (every linger of the bench's mix was that: 43 of 4605 tokens,
// none joined by another).
type pace struct {
	at [paceWindow]time.Time // arrival of the latest pieces, a ring
	n  int                   // pieces seen
}

// hold records a piece arriving at and reports whether it should linger.
func (p *pace) hold(at time.Time) bool {
	first := p.at[p.n%paceWindow] // the piece paceWindow before this one
	p.at[p.n%paceWindow] = at
	p.n++
	if p.n <= paceWindow {
		return false // too few pieces to judge the rate by
	}
	return at.Sub(first) < paceWindow*textLinger
}
