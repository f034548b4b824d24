package web

// current is the aria-current of a nav link: "page" on its own page.
func current(page, link string) string {
	if page == link {
		return "page"
	}
	return "false"
}
