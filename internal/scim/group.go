package scim

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/agentik/agentik/internal/agent"
)

// A SCIM Group is an agentik group: id its id, displayName its name,
// members its users (value: a user id). Groups SCIM makes are of source
// scim, and so are the memberships it adds.

type memberDoc struct {
	Value string `json:"value"`
	Ref   string `json:"$ref,omitempty"`
}

type groupDoc struct {
	Schemas     []string    `json:"schemas"`
	ID          string      `json:"id,omitempty"`
	DisplayName string      `json:"displayName"`
	Members     []memberDoc `json:"members,omitempty"`
	Meta        *metaDoc    `json:"meta,omitempty"`
}

func (h *Handler) groupDoc(r *http.Request, g agent.Group, members bool) groupDoc {
	d := groupDoc{Schemas: []string{SchemaGroup}, ID: g.ID, DisplayName: g.Name,
		Meta: &metaDoc{ResourceType: "Group", Created: g.CreatedAt.UTC().Format(time.RFC3339), Location: h.location(r, "Groups", g.ID)}}
	if members {
		d.Members = []memberDoc{}
		for _, m := range g.Members {
			d.Members = append(d.Members, memberDoc{Value: m, Ref: h.location(r, "Users", m)})
		}
	}
	return d
}

// withMembers reports whether a GET asks for members (Okta asks
// excludedAttributes=members of groups it only looks up).
func withMembers(r *http.Request) bool {
	for _, a := range strings.Split(r.URL.Query().Get("excludedAttributes"), ",") {
		if strings.EqualFold(strings.TrimSpace(stripURN(a)), "members") {
			return false
		}
	}
	return true
}

func memberIDs(ms []memberDoc) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Value)
	}
	return out
}

func (h *Handler) listGroups(w http.ResponseWriter, r *http.Request) error {
	f, err := parseFilter(r.URL.Query().Get("filter"), "displayname", "id")
	if err != nil {
		return err
	}
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	gs, err := h.cfg.Groups.List(ctxOf(r))
	if err != nil {
		return err
	}
	docs := []groupDoc{}
	for _, g := range gs {
		if f != nil && (f.attr == "id" && g.ID != f.value || f.attr == "displayname" && !strings.EqualFold(g.Name, f.value)) {
			continue
		}
		docs = append(docs, h.groupDoc(r, g, withMembers(r)))
	}
	write(w, http.StatusOK, listResponse(docs, p))
	return nil
}

func (h *Handler) getGroup(w http.ResponseWriter, r *http.Request) error {
	g, err := h.cfg.Groups.Get(ctxOf(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	write(w, http.StatusOK, h.groupDoc(r, g, withMembers(r)))
	return nil
}

func (h *Handler) createGroup(w http.ResponseWriter, r *http.Request) error {
	var d groupDoc
	if err := decode(r, &d); err != nil {
		return err
	}
	if strings.TrimSpace(d.DisplayName) == "" {
		return errBad("invalidValue", "displayName is required")
	}
	g, err := h.cfg.Groups.Create(ctxOf(r), d.DisplayName, memberIDs(d.Members), agent.GroupSourceSCIM)
	if err != nil {
		return err
	}
	doc := h.groupDoc(r, g, true)
	w.Header().Set("Location", doc.Meta.Location)
	write(w, http.StatusCreated, doc)
	return nil
}

func (h *Handler) replaceGroup(w http.ResponseWriter, r *http.Request) error {
	g, err := h.cfg.Groups.Get(ctxOf(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	var d groupDoc
	if err := decode(r, &d); err != nil {
		return err
	}
	if strings.TrimSpace(d.DisplayName) == "" {
		return errBad("invalidValue", "displayName is required")
	}
	if g, err = h.change(r, g, d.DisplayName, memberIDs(d.Members)); err != nil {
		return err
	}
	write(w, http.StatusOK, h.groupDoc(r, g, true))
	return nil
}

// change renames g to name and makes members its members, each only when
// it changes.
func (h *Handler) change(r *http.Request, g agent.Group, name string, members []string) (agent.Group, error) {
	var err error
	if strings.TrimSpace(name) != g.Name {
		if g, err = h.cfg.Groups.Rename(ctxOf(r), g.ID, name); err != nil {
			return agent.Group{}, err
		}
	}
	return h.cfg.Groups.SetMembers(ctxOf(r), g.ID, members, agent.GroupSourceSCIM)
}

// patchGroup applies the operations to the group's name and member list
// first, then stores the result: a PATCH whose fourth operation is bad
// changes nothing.
func (h *Handler) patchGroup(w http.ResponseWriter, r *http.Request) error {
	g, err := h.cfg.Groups.Get(ctxOf(r), r.PathValue("id"))
	if err != nil {
		return err
	}
	ops, err := readPatch(r)
	if err != nil {
		return err
	}
	name, members := g.Name, slices.Clone(g.Members)
	for _, o := range ops {
		if name, members, err = patchGroupOp(o, name, members); err != nil {
			return err
		}
	}
	if _, err := h.change(r, g, name, members); err != nil {
		return err
	}
	write(w, http.StatusNoContent, nil)
	return nil
}

// patchGroupOp applies one operation to a group's name and members.
func patchGroupOp(o patchOp, name string, members []string) (string, []string, error) {
	if o.path == "" { // Okta's {"op":"replace","value":{"id":…,"displayName":…}}
		var attrs map[string]json.RawMessage
		if err := json.Unmarshal(o.value, &attrs); err != nil {
			return "", nil, errBad("invalidValue", "the value must be an object of attributes")
		}
		for k, v := range attrs {
			var err error
			if name, members, err = patchGroupOp(patchOp{op: o.op, path: stripURN(k), value: v}, name, members); err != nil {
				return "", nil, err
			}
		}
		return name, members, nil
	}
	if m := valuePath.FindStringSubmatch(o.path); m != nil {
		// members[value eq "id"]: Entra ID's removal of one member.
		if !strings.EqualFold(m[1], "members") || !strings.EqualFold(m[2], "value") || m[4] != "" {
			return "", nil, errBad("invalidPath", "the path "+o.path+" is not supported; use members or members[value eq \"ID\"]")
		}
		var id string
		_ = json.Unmarshal([]byte(m[3]), &id)
		if o.op != "remove" {
			return "", nil, errBad("invalidPath", "members[value eq …] takes a remove; add members with the path members")
		}
		return name, slices.DeleteFunc(members, func(u string) bool { return u == id }), nil
	}
	switch strings.ToLower(o.path) {
	case "displayname":
		if o.op == "remove" {
			return "", nil, errBad("mutability", "displayName is required and cannot be removed")
		}
		s, err := str(o.value)
		return s, members, err
	case "members":
		var ms []memberDoc
		if len(o.value) > 0 && string(o.value) != "null" {
			if err := json.Unmarshal(o.value, &ms); err != nil {
				return "", nil, errBad("invalidValue", "members takes a list of {\"value\": USER_ID}")
			}
		}
		ids := memberIDs(ms)
		switch o.op {
		case "add":
			return name, append(members, ids...), nil
		case "replace":
			return name, ids, nil
		default: // remove: those listed, or all without a value
			if len(ms) == 0 {
				return name, []string{}, nil
			}
			return name, slices.DeleteFunc(members, func(u string) bool { return slices.Contains(ids, u) }), nil
		}
	}
	return name, members, nil // an attribute agentik does not keep (externalId)
}

func (h *Handler) deleteGroup(w http.ResponseWriter, r *http.Request) error {
	if err := h.cfg.Groups.Delete(ctxOf(r), r.PathValue("id")); err != nil {
		return err
	}
	write(w, http.StatusNoContent, nil)
	return nil
}
