package agent

import (
	"context"
	"fmt"
)

// Nothing runs for a user who no longer stands: every turn's start (a
// send, a queued send, a schedule's run) and every model call made for a
// user (a turn's rounds, a compaction's summary, a title) asks mayRun
// first, so a disabled or deleted owner's conversations stop at their
// next model call and start nothing, whoever asks.

// mayRun refuses work for owner: forbidden when they are deleted or
// disabled, quota_exceeded when their token budget is used up.
func (r *Runner) mayRun(ctx context.Context, owner string) error {
	return r.mayRunFor(ctx, owner, owner)
}

// mayRunFor is mayRun of work in owner's conversation that payer pays
// for: an admin acting in another user's conversation (SentBy) pays
// herself, but nothing runs in a disabled owner's conversation.
func (r *Runner) mayRunFor(ctx context.Context, owner, payer string) error {
	if err := r.stands(ctx, owner); err != nil {
		return err
	}
	return r.cfg.Budgets.Check(ctx, payer)
}

// MayRun is mayRun for the scheduler: what a run would be refused with,
// asked before it creates the run's conversation.
func (r *Runner) MayRun(ctx context.Context, owner string) error { return r.mayRun(ctx, owner) }

// stands answers forbidden for a deleted or disabled owner.
func (r *Runner) stands(ctx context.Context, owner string) error {
	if r.cfg.Users == nil || owner == LocalUser {
		return nil
	}
	u, err := r.cfg.Users.User(ctx, owner)
	if ErrorCode(err) == CodeNotFound || err == nil && u.Disabled {
		return Errorf(CodeForbidden, "the owner of this conversation (user %s) is disabled or deleted: nothing runs for them", Shorten(owner, 60))
	}
	if err != nil {
		return fmt.Errorf("owner: %w", err)
	}
	return nil
}

// admit is what a model call made in owner's conversation asks first:
// that the owner stands, and a reservation of its estimated tokens in
// payer's budget (budget.go; the owner's, or an admin's acting there).
// done charges the call's usage to payer and releases the reservation.
func (r *Runner) admit(ctx context.Context, owner, payer string, tokens int) (done func(Usage), err error) {
	if err := r.stands(ctx, owner); err != nil {
		return nil, err
	}
	return r.cfg.Budgets.Reserve(ctx, payer, int64(tokens))
}
