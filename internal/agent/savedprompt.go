package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Saved prompts (DESIGN.md §12.5a) are a person's library of prompts: a short
// name (what `/` in the composer matches) and a text, private to their
// owner unless shared with a project, whose members then read and insert
// it. Only the owner changes or deletes a prompt; anyone else who may not
// read it is told it does not exist.

// Limits of prompts.
const (
	MaxPromptName  = 80    // characters
	MaxPromptText  = 20000 // characters
	MaxPromptsUser = 500   // prompts a person owns
)

// SavedPrompt is one saved prompt as its reader sees it.
type SavedPrompt struct {
	ID        string    `json:"id"` // "prompt_…"
	Owner     string    `json:"owner"`
	Name      string    `json:"name"`
	Text      string    `json:"text"`
	Project   string    `json:"project,omitempty"` // the project it is shared with
	Mine      bool      `json:"mine"`              // the reader owns it (and may change it)
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SavedPromptInput creates or changes a prompt: nil fields stay as they are;
// Project "" stops sharing it.
type SavedPromptInput struct {
	Name    *string `json:"name"`
	Text    *string `json:"text"`
	Project *string `json:"project"`
}

// SavedPromptStore keeps prompts.
type SavedPromptStore interface {
	// PutSavedPrompt creates or replaces prompt p.
	PutSavedPrompt(ctx context.Context, p SavedPrompt) error
	// SavedPrompt is prompt id; not_found when there is none.
	SavedPrompt(ctx context.Context, id string) (SavedPrompt, error)
	// SavedPrompts lists owner's prompts and those shared with any of
	// projects, by name.
	SavedPrompts(ctx context.Context, owner string, projects []string) ([]SavedPrompt, error)
	// CountSavedPrompts counts owner's prompts.
	CountSavedPrompts(ctx context.Context, owner string) (int, error)
	// DeleteSavedPrompt deletes prompt id (none: nil).
	DeleteSavedPrompt(ctx context.Context, id string) error
}

// PromptLibraryConfig configures the prompts service.
type PromptLibraryConfig struct {
	Store    SavedPromptStore
	Projects *Projects // who may share with and read through a project; nil: no sharing
	Now      Clock     // time.Now when nil
}

// PromptLibrary is the prompt library service.
type PromptLibrary struct {
	cfg PromptLibraryConfig
}

// NewPromptLibrary makes the prompts service.
func NewPromptLibrary(cfg PromptLibraryConfig) (*PromptLibrary, error) {
	if cfg.Store == nil {
		return nil, errors.New("prompts: a store is required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &PromptLibrary{cfg: cfg}, nil
}

func errNoPrompt(id string) error {
	return Errorf(CodeNotFound, "prompt %q not found", Shorten(id, 80))
}

// memberOf lists the projects the caller has a role in.
func (ps *PromptLibrary) memberOf(ctx context.Context) ([]string, error) {
	if ps.cfg.Projects == nil {
		return nil, nil
	}
	list, err := ps.cfg.Projects.List(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range list {
		if p.Role != "" {
			ids = append(ids, p.ID)
		}
	}
	return ids, nil
}

// List lists the prompts the caller may insert: their own and those
// shared with their projects, by name.
func (ps *PromptLibrary) List(ctx context.Context) ([]SavedPrompt, error) {
	me := PrincipalFrom(ctx).UserID
	if me == "" {
		return []SavedPrompt{}, nil
	}
	projects, err := ps.memberOf(ctx)
	if err != nil {
		return nil, err
	}
	list, err := ps.cfg.Store.SavedPrompts(ctx, me, projects)
	if err != nil {
		return nil, err
	}
	for i := range list {
		list[i].Mine = list[i].Owner == me
	}
	if list == nil {
		list = []SavedPrompt{}
	}
	return list, nil
}

// Prompt is prompt id if the caller may read it, else not_found.
func (ps *PromptLibrary) Prompt(ctx context.Context, id string) (SavedPrompt, error) {
	p, err := ps.cfg.Store.SavedPrompt(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return SavedPrompt{}, errNoPrompt(id)
	}
	if err != nil {
		return SavedPrompt{}, err
	}
	me := PrincipalFrom(ctx).UserID
	if me != "" && p.Owner == me {
		p.Mine = true
		return p, nil
	}
	if p.Project != "" && ps.cfg.Projects != nil && me != "" {
		if pr, err := ps.cfg.Projects.projectFor(ctx, p.Project); err == nil && pr.Role != "" {
			return p, nil
		}
	}
	return SavedPrompt{}, errNoPrompt(id)
}

// own is prompt id if the caller owns it: forbidden for a project member
// who reads it, not_found for anyone else.
func (ps *PromptLibrary) own(ctx context.Context, id string) (SavedPrompt, error) {
	p, err := ps.Prompt(ctx, id)
	if err != nil {
		return SavedPrompt{}, err
	}
	if !p.Mine {
		return SavedPrompt{}, Errorf(CodeForbidden, "prompt %q is shared with you: only its owner changes it", p.Name)
	}
	return p, nil
}

// Create saves a prompt of the caller's.
func (ps *PromptLibrary) Create(ctx context.Context, in SavedPromptInput) (SavedPrompt, error) {
	me := PrincipalFrom(ctx).UserID
	if me == "" {
		return SavedPrompt{}, Errorf(CodeUnauthorized, "sign in to save a prompt")
	}
	if in.Name == nil || in.Text == nil {
		return SavedPrompt{}, Errorf(CodeBadRequest, "name and text are required")
	}
	now := ps.cfg.Now().UTC()
	p := SavedPrompt{ID: "prompt_" + NewID(), Owner: me, Mine: true, CreatedAt: now, UpdatedAt: now}
	if err := ps.apply(ctx, &p, in); err != nil {
		return SavedPrompt{}, err
	}
	n, err := ps.cfg.Store.CountSavedPrompts(ctx, me)
	if err != nil {
		return SavedPrompt{}, err
	}
	if n >= MaxPromptsUser {
		return SavedPrompt{}, Errorf(CodeBadRequest, "you have %d prompts, the most one person keeps: delete one first", n)
	}
	if err := ps.cfg.Store.PutSavedPrompt(ctx, p); err != nil {
		return SavedPrompt{}, err
	}
	return p, nil
}

// Update changes a prompt of the caller's.
func (ps *PromptLibrary) Update(ctx context.Context, id string, in SavedPromptInput) (SavedPrompt, error) {
	p, err := ps.own(ctx, id)
	if err != nil {
		return SavedPrompt{}, err
	}
	if err := ps.apply(ctx, &p, in); err != nil {
		return SavedPrompt{}, err
	}
	p.UpdatedAt = ps.cfg.Now().UTC()
	if err := ps.cfg.Store.PutSavedPrompt(ctx, p); err != nil {
		return SavedPrompt{}, err
	}
	return p, nil
}

// Delete deletes a prompt of the caller's.
func (ps *PromptLibrary) Delete(ctx context.Context, id string) error {
	if _, err := ps.own(ctx, id); err != nil {
		return err
	}
	return ps.cfg.Store.DeleteSavedPrompt(ctx, id)
}

// apply checks in and sets it on p.
func (ps *PromptLibrary) apply(ctx context.Context, p *SavedPrompt, in SavedPromptInput) error {
	if in.Name != nil {
		name := strings.TrimSpace(*in.Name)
		switch {
		case name == "":
			return Errorf(CodeBadRequest, "name must not be empty")
		case !plainText(name) || strings.ContainsAny(name, "\r\n"):
			return Errorf(CodeBadRequest, "name must be one line of text")
		case utf8.RuneCountInString(name) > MaxPromptName:
			return Errorf(CodeBadRequest, "name must be at most %d characters", MaxPromptName)
		}
		p.Name = name
	}
	if in.Text != nil {
		switch {
		case strings.TrimSpace(*in.Text) == "":
			return Errorf(CodeBadRequest, "text must not be empty")
		case !plainText(*in.Text):
			return Errorf(CodeBadRequest, "text must be valid UTF-8 without NUL characters")
		case utf8.RuneCountInString(*in.Text) > MaxPromptText:
			return Errorf(CodeBadRequest, "text must be at most %d characters", MaxPromptText)
		}
		p.Text = *in.Text
	}
	if in.Project != nil && *in.Project != p.Project {
		if *in.Project != "" {
			if ps.cfg.Projects == nil {
				return Errorf(CodeUnavailable, "this server has no projects to share with")
			}
			pr, err := ps.cfg.Projects.projectFor(ctx, *in.Project)
			if err != nil {
				return err
			}
			if pr.Role == "" {
				return errNoProject(*in.Project) // an admin shares only with projects they are in
			}
		}
		p.Project = *in.Project
	}
	return nil
}

// plainText reports whether s is valid UTF-8 without NUL characters.
func plainText(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// SortSavedPrompts orders prompts by name, case-insensitively, then id.
func SortSavedPrompts(list []SavedPrompt) {
	slices.SortFunc(list, func(a, b SavedPrompt) int {
		if c := strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}
