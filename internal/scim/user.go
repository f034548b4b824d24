package scim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// A SCIM User is an agentik user: id is the user's id, userName their
// user_name (unique), name/displayName their name, the primary (else
// work, else first) email their email, active the opposite of disabled.
// Attributes agentik does not keep (phone numbers, titles, the enterprise
// extension) are accepted and not stored. The user local (the server's
// own admin) is not SCIM's.

type nameDoc struct {
	Formatted  string `json:"formatted,omitempty"`
	GivenName  string `json:"givenName,omitempty"`
	FamilyName string `json:"familyName,omitempty"`
}

type emailDoc struct {
	Value   string    `json:"value"`
	Type    string    `json:"type,omitempty"`
	Primary *flexBool `json:"primary,omitempty"`
}

type metaDoc struct {
	ResourceType string `json:"resourceType"`
	Created      string `json:"created,omitempty"`
	LastModified string `json:"lastModified,omitempty"`
	Location     string `json:"location"`
}

// userDoc is a User resource as sent and answered.
type userDoc struct {
	Schemas     []string   `json:"schemas"`
	ID          string     `json:"id,omitempty"`
	UserName    string     `json:"userName"`
	Name        *nameDoc   `json:"name,omitempty"`
	DisplayName string     `json:"displayName,omitempty"`
	Emails      []emailDoc `json:"emails,omitempty"`
	Active      *flexBool  `json:"active,omitempty"`
	Meta        *metaDoc   `json:"meta,omitempty"`
}

func (h *Handler) userDoc(r *http.Request, u agent.User) userDoc {
	active := flexBool(!u.Disabled)
	given, family, _ := strings.Cut(u.Name, " ")
	d := userDoc{Schemas: []string{SchemaUser}, ID: u.ID, UserName: cmpOr(u.UserName, u.Email, u.ID), DisplayName: u.Name,
		Name:   &nameDoc{Formatted: u.Name, GivenName: given, FamilyName: family},
		Active: &active,
		Meta:   &metaDoc{ResourceType: "User", Created: u.CreatedAt.UTC().Format(time.RFC3339), Location: h.location(r, "Users", u.ID)}}
	if u.Email != "" {
		yes := flexBool(true)
		d.Emails = []emailDoc{{Value: u.Email, Type: "work", Primary: &yes}}
	}
	return d
}

func cmpOr(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// person is what agentik keeps of a SCIM user, while a request changes it.
type person struct {
	userName, name, email string
	given, family         string
	nameSet, partsSet     bool // displayName (or formatted) given; givenName/familyName given
	active                bool
}

func personOf(u agent.User) person {
	given, family, _ := strings.Cut(u.Name, " ")
	return person{userName: u.UserName, name: u.Name, email: u.Email, given: given, family: family, active: !u.Disabled}
}

// input is p as a change of a user.
func (p person) input() agent.UserInput {
	name := p.name
	if p.partsSet && !p.nameSet {
		name = strings.TrimSpace(p.given + " " + p.family)
	}
	name = cmpOr(strings.TrimSpace(name), p.userName)
	disabled := !p.active
	return agent.UserInput{Name: &name, Email: &p.email, UserName: &p.userName, Disabled: &disabled}
}

// fromDoc sets p from a whole User (POST, PUT).
func (p *person) fromDoc(d userDoc) error {
	if strings.TrimSpace(d.UserName) == "" {
		return errBad("invalidValue", "userName is required")
	}
	p.userName = d.UserName
	p.name, p.nameSet = d.DisplayName, d.DisplayName != ""
	p.given, p.family = "", ""
	if d.Name != nil {
		if !p.nameSet && d.Name.Formatted != "" {
			p.name, p.nameSet = d.Name.Formatted, true
		}
		p.given, p.family, p.partsSet = d.Name.GivenName, d.Name.FamilyName, true
	}
	p.email = pickEmail(d.Emails)
	p.active = d.Active == nil || bool(*d.Active)
	return nil
}

// pickEmail is the primary email, else the work one, else the first.
func pickEmail(es []emailDoc) string {
	if i := slices.IndexFunc(es, func(e emailDoc) bool { return e.Primary != nil && bool(*e.Primary) }); i >= 0 {
		return es[i].Value
	}
	if i := slices.IndexFunc(es, func(e emailDoc) bool { return strings.EqualFold(e.Type, "work") }); i >= 0 {
		return es[i].Value
	}
	if len(es) > 0 {
		return es[0].Value
	}
	return ""
}

// apply applies one PATCH operation: with a path, to that attribute;
// without, each attribute of the value.
func (p *person) apply(o patchOp) error {
	if o.path == "" {
		var attrs map[string]json.RawMessage
		if err := json.Unmarshal(o.value, &attrs); err != nil {
			return errBad("invalidValue", "the value must be an object of attributes")
		}
		for k, v := range attrs {
			if err := p.set(o.op, stripURN(k), v); err != nil {
				return err
			}
		}
		return nil
	}
	return p.set(o.op, o.path, o.value)
}

// set applies op to one attribute path.
func (p *person) set(op, path string, v json.RawMessage) error {
	if op == "remove" {
		v = json.RawMessage(`null`)
	}
	if m := valuePath.FindStringSubmatch(path); m != nil {
		// emails[type eq "work"].value: the one email agentik keeps.
		if strings.EqualFold(m[1], "emails") && (m[4] == "" || strings.EqualFold(m[4], "value")) {
			if m[4] == "" && op != "remove" {
				var e emailDoc
				if json.Unmarshal(v, &e) != nil {
					return errBad("invalidValue", "emails[…] takes an email object")
				}
				p.email = e.Value
				return nil
			}
			s, err := str(v)
			p.email = s
			return err
		}
		return nil // a filtered attribute agentik does not keep
	}
	switch strings.ToLower(path) {
	case "username":
		s, err := str(v)
		if err != nil {
			return err
		}
		if op == "remove" || strings.TrimSpace(s) == "" {
			return errBad("mutability", "userName is required and cannot be removed")
		}
		p.userName = s
	case "displayname", "name.formatted":
		s, err := str(v)
		p.name, p.nameSet = s, true
		return err
	case "name.givenname":
		s, err := str(v)
		p.given, p.partsSet = s, true
		return err
	case "name.familyname":
		s, err := str(v)
		p.family, p.partsSet = s, true
		return err
	case "name":
		var n nameDoc
		if op != "remove" && json.Unmarshal(v, &n) != nil {
			return errBad("invalidValue", "name takes an object")
		}
		if n.Formatted != "" {
			p.name, p.nameSet = n.Formatted, true
		}
		p.given, p.family, p.partsSet = n.GivenName, n.FamilyName, true
	case "emails":
		var es []emailDoc
		if op != "remove" && json.Unmarshal(v, &es) != nil {
			return errBad("invalidValue", "emails takes a list of email objects")
		}
		p.email = pickEmail(es)
	case "emails.value":
		s, err := str(v)
		p.email = s
		return err
	case "active":
		if op == "remove" {
			return errBad("mutability", "active cannot be removed")
		}
		var b flexBool
		if err := json.Unmarshal(v, &b); err != nil {
			return err
		}
		p.active = bool(b)
	}
	return nil // an attribute agentik does not keep (externalId, title…)
}

// user is the SCIM user id, or 404 (the user local is not SCIM's).
func (h *Handler) user(r *http.Request) (agent.User, error) {
	id := r.PathValue("id")
	if id == agent.LocalUser {
		return agent.User{}, errNotFound("user " + id + " not found")
	}
	return h.cfg.Accounts.User(ctxOf(r), id)
}

func (h *Handler) listUsers(w http.ResponseWriter, r *http.Request) error {
	f, err := parseFilter(r.URL.Query().Get("filter"), "username", "id", "emails.value", "emails")
	if err != nil {
		return err
	}
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	us, err := h.cfg.Accounts.Users(ctxOf(r))
	if err != nil {
		return err
	}
	docs := []userDoc{}
	for _, u := range us {
		if u.ID == agent.LocalUser {
			continue
		}
		if f != nil {
			var have string
			switch f.attr {
			case "username":
				have = cmpOr(u.UserName, u.Email)
			case "id":
				have = u.ID
			default:
				have = u.Email
			}
			if !strings.EqualFold(have, f.value) { // userName and emails are caseExact false (RFC 7643 §4.1)
				continue
			}
		}
		docs = append(docs, h.userDoc(r, u))
	}
	write(w, http.StatusOK, listResponse(docs, p))
	return nil
}

func (h *Handler) getUser(w http.ResponseWriter, r *http.Request) error {
	u, err := h.user(r)
	if err != nil {
		return err
	}
	write(w, http.StatusOK, h.userDoc(r, u))
	return nil
}

func (h *Handler) createUser(w http.ResponseWriter, r *http.Request) error {
	var d userDoc
	if err := decode(r, &d); err != nil {
		return err
	}
	var p person
	if err := p.fromDoc(d); err != nil {
		return err
	}
	if err := h.unique(r, p.userName, ""); err != nil {
		return err
	}
	u, err := h.cfg.Accounts.AddUser(ctxOf(r), p.input())
	if err != nil {
		return err
	}
	doc := h.userDoc(r, u)
	w.Header().Set("Location", doc.Meta.Location)
	write(w, http.StatusCreated, doc)
	return nil
}

// unique is 409 uniqueness when another user than id has userName
// (compared without case, as SCIM's userName is).
func (h *Handler) unique(r *http.Request, userName, id string) error {
	us, err := h.cfg.Accounts.Users(ctxOf(r))
	if err != nil {
		return err
	}
	for _, u := range us {
		if u.ID != id && u.UserName != "" && strings.EqualFold(u.UserName, userName) {
			return &Error{Status: http.StatusConflict, ScimType: "uniqueness", Detail: "a user with userName " + userName + " exists already"}
		}
	}
	return nil
}

func (h *Handler) replaceUser(w http.ResponseWriter, r *http.Request) error {
	u, err := h.user(r)
	if err != nil {
		return err
	}
	var d userDoc
	if err := decode(r, &d); err != nil {
		return err
	}
	p := personOf(u)
	if err := p.fromDoc(d); err != nil {
		return err
	}
	return h.update(w, r, u, p)
}

func (h *Handler) patchUser(w http.ResponseWriter, r *http.Request) error {
	u, err := h.user(r)
	if err != nil {
		return err
	}
	ops, err := readPatch(r)
	if err != nil {
		return err
	}
	p := personOf(u)
	for _, o := range ops {
		if err := p.apply(o); err != nil {
			return err
		}
	}
	return h.update(w, r, u, p)
}

// update stores p as user u's new state: one change, so that a
// deactivation disables the user at once (agent.Accounts.UpdateUser ends
// their sockets and keys).
func (h *Handler) update(w http.ResponseWriter, r *http.Request, u agent.User, p person) error {
	if p.userName != u.UserName {
		if err := h.unique(r, p.userName, u.ID); err != nil {
			return err
		}
	}
	nu, err := h.cfg.Accounts.UpdateUser(ctxOf(r), u.ID, p.input())
	if err != nil {
		return err
	}
	write(w, http.StatusOK, h.userDoc(r, nu))
	return nil
}

func (h *Handler) deleteUser(w http.ResponseWriter, r *http.Request) error {
	u, err := h.user(r)
	if err != nil {
		return err
	}
	if err := h.cfg.Accounts.DeleteUser(ctxOf(r), u.ID); err != nil {
		return err
	}
	write(w, http.StatusNoContent, nil)
	return nil
}
