package console

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/switchboard-ai/switchboard/domain"
	"github.com/switchboard-ai/switchboard/ports"
)

// listPage is how many presets, versions, guardrails, workspaces or assignments a page shows; a longer list is
// paged, each list by a query parameter of its own that holds the offset of its first entry shown.
var listPage = ports.Page{Limit: 100}

// maxOffset bounds a list's offset, as the API's offset is.
const maxOffset = 1<<31 - 1

// pager is where a page of a list is in the whole list, and the links to the pages before and after it (empty when
// there is none): the template "pager" shows them under the list.
type pager struct {
	From, To, Total int
	Prev, Next      string
}

// listAt is the page of a list whose offset is in the query parameter param; fallback is the offset when the
// parameter is absent, given the list's length (the newest versions of a preset are its last), or nil for 0.
// fetch reads a page of the list and says how long the whole list is.
func listAt[T any](r *http.Request, param string, fallback func(total int) int,
	fetch func(ports.Page) ([]T, int, error)) ([]T, pager, error) {
	page := listPage
	raw, given := r.URL.Query()[param]
	if given {
		n, err := strconv.Atoi(raw[0])
		if err != nil || n < 0 || n > maxOffset {
			return nil, pager{}, domain.Invalid(param, "must be an offset: a whole number from 0")
		}
		page.Offset = n
	}
	items, total, err := fetch(page)
	if err == nil && !given && fallback != nil {
		if off := fallback(total); off != page.Offset {
			page.Offset = off
			items, total, err = fetch(page)
		}
	}
	if err != nil {
		return nil, pager{}, err
	}
	p := pager{From: min(page.Offset+1, total), To: min(page.Offset+len(items), total), Total: total}
	link := func(offset int) string {
		q := r.URL.Query()
		q.Set(param, strconv.Itoa(offset))
		return (&url.URL{Path: r.URL.Path, RawQuery: q.Encode()}).String()
	}
	if page.Offset > 0 { // past the end, the page before is the list's last
		p.Prev = link(min(max(page.Offset-page.Limit, 0), lastPage(total)))
	}
	if page.Offset+len(items) < total {
		p.Next = link(page.Offset + len(items))
	}
	return items, p, nil
}

// lastPage is the offset of a list's last listPage entries.
func lastPage(total int) int { return max(total-listPage.Limit, 0) }
