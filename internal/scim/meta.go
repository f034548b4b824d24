package scim

import (
	"net/http"
	"strings"
)

// The discovery endpoints (RFC 7644 §4): what this provider supports,
// its resource types and their schemas (the attributes agentik keeps).

func (h *Handler) serviceProviderConfig(w http.ResponseWriter, r *http.Request) error {
	no := map[string]bool{"supported": false}
	write(w, http.StatusOK, map[string]any{
		"schemas":          []string{SchemaSPConfig},
		"documentationUri": "https://github.com/agentik/agentik/blob/main/docs/PROTOCOL.md#scim-20",
		"patch":            map[string]bool{"supported": true},
		"bulk":             map[string]any{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":           map[string]any{"supported": true, "maxResults": maxCount},
		"changePassword":   no,
		"sort":             no,
		"etag":             no,
		"authenticationSchemes": []map[string]any{{
			"type": "oauthbearertoken", "name": "Bearer token", "primary": true,
			"description": "Authorization: Bearer AGENTIK_SCIM_TOKEN",
		}},
		"meta": map[string]string{"resourceType": "ServiceProviderConfig", "location": h.location(r, "ServiceProviderConfig", "")},
	})
	return nil
}

func (h *Handler) resourceTypeDocs(r *http.Request) []map[string]any {
	mk := func(name, endpoint, schema string) map[string]any {
		return map[string]any{"schemas": []string{SchemaResourceType}, "id": name, "name": name, "endpoint": "/" + endpoint,
			"schema": schema, "meta": map[string]string{"resourceType": "ResourceType", "location": h.location(r, "ResourceTypes", name)}}
	}
	return []map[string]any{mk("User", "Users", SchemaUser), mk("Group", "Groups", SchemaGroup)}
}

func (h *Handler) resourceTypes(w http.ResponseWriter, r *http.Request) error {
	write(w, http.StatusOK, listResponse(h.resourceTypeDocs(r), page{start: 1, count: maxCount}))
	return nil
}

func (h *Handler) resourceType(w http.ResponseWriter, r *http.Request) error {
	for _, d := range h.resourceTypeDocs(r) {
		if strings.EqualFold(d["id"].(string), r.PathValue("id")) {
			write(w, http.StatusOK, d)
			return nil
		}
	}
	return errNotFound("no resource type " + r.PathValue("id"))
}

// attr is a schema attribute's definition (RFC 7643 §7).
func attr(name, typ string, required bool, uniqueness string, sub ...map[string]any) map[string]any {
	a := map[string]any{"name": name, "type": typ, "multiValued": false, "required": required, "caseExact": false,
		"mutability": "readWrite", "returned": "default", "uniqueness": uniqueness}
	if len(sub) > 0 {
		a["subAttributes"] = sub
	}
	return a
}

func multi(a map[string]any) map[string]any { a["multiValued"] = true; return a }

func (h *Handler) schemaDocs(r *http.Request) []map[string]any {
	mk := func(id, name string, attrs ...map[string]any) map[string]any {
		return map[string]any{"schemas": []string{SchemaSchema}, "id": id, "name": name, "attributes": attrs,
			"meta": map[string]string{"resourceType": "Schema", "location": h.location(r, "Schemas", id)}}
	}
	return []map[string]any{
		mk(SchemaUser, "User",
			attr("userName", "string", true, "server"),
			attr("name", "complex", false, "none", attr("formatted", "string", false, "none"), attr("givenName", "string", false, "none"), attr("familyName", "string", false, "none")),
			attr("displayName", "string", false, "none"),
			multi(attr("emails", "complex", false, "none", attr("value", "string", false, "server"), attr("type", "string", false, "none"), attr("primary", "boolean", false, "none"))),
			attr("active", "boolean", false, "none")),
		mk(SchemaGroup, "Group",
			attr("displayName", "string", true, "server"),
			multi(attr("members", "complex", false, "none", attr("value", "string", false, "none"), attr("$ref", "reference", false, "none")))),
	}
}

func (h *Handler) schemas(w http.ResponseWriter, r *http.Request) error {
	write(w, http.StatusOK, listResponse(h.schemaDocs(r), page{start: 1, count: maxCount}))
	return nil
}

func (h *Handler) schema(w http.ResponseWriter, r *http.Request) error {
	for _, d := range h.schemaDocs(r) {
		if d["id"] == r.PathValue("id") {
			write(w, http.StatusOK, d)
			return nil
		}
	}
	return errNotFound("no schema " + r.PathValue("id"))
}
