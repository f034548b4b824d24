package web

import "strings"

// Shortcut is one keyboard shortcut of the chat UI. The list is owned
// here: the dialog "?" opens renders it (ShortcutsDialog), and
// assets/src/shortcuts.js binds the keys it reads from that dialog.
type Shortcut struct {
	// Action names what assets/src/shortcuts.js does.
	Action string
	// Keys is the chord: modifiers ("Mod": Ctrl, or ⌘ on a Mac; "Shift";
	// "Alt") and a KeyboardEvent.key, joined by "+".
	Keys string
	// Label says what it does.
	Label string
	// Typing: it also works while the focus is in a text field. Chords
	// with Ctrl or ⌘, and Escape, type nothing; "?" does.
	Typing bool
}

// Shortcuts are the chat UI's keyboard shortcuts, as ChatGPT's and Open
// WebUI's users know them.
func Shortcuts() []Shortcut {
	return []Shortcut{
		{Action: "new-chat", Keys: "Mod+Shift+O", Label: "New chat", Typing: true},
		{Action: "search", Keys: "Mod+K", Label: "Search chats", Typing: true},
		{Action: "focus-composer", Keys: "Shift+Escape", Label: "Focus the message box", Typing: true},
		{Action: "stop", Keys: "Escape", Label: "Stop the answer", Typing: true},
		{Action: "copy-answer", Keys: "Mod+Shift+C", Label: "Copy the last answer", Typing: true},
		{Action: "shortcuts", Keys: "?", Label: "Show these shortcuts", Typing: false},
		{Action: "shortcuts", Keys: "Mod+/", Label: "Show these shortcuts from a text field", Typing: true},
	}
}

// keyNames are how the dialog names the keys of a chord.
var keyNames = map[string]string{"Mod": "Ctrl/⌘", "Escape": "Esc"}

// KeyNames splits a chord into the names of its keys ("Ctrl/⌘", "Shift",
// "O").
func KeyNames(chord string) []string {
	keys := strings.Split(chord, "+")
	for i, k := range keys {
		if n, ok := keyNames[k]; ok {
			keys[i] = n
		}
	}
	return keys
}
