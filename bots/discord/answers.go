package discord

import (
	"container/list"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
)

// answer is what the Bot remembers of a message it answered, so that an
// edit re-runs it into the same reply and a delete removes the reply.
type answer struct {
	channelID string
	guildID   string
	user      string    // rate-limit key of the author
	at        time.Time // when the message was first answered: the edit window starts here
	explicit  bool      // triggered by the prefix, a mention or a DM
	content   string    // the message content last run, to tell edits from embed updates
	replyID   string    // "" while the first run is in flight
	ok        bool      // the reply shows a success (✅)
	ran       bool      // the reply shows a run, not a rejection or notice
	gen       int       // bumped by every re-run; only the newest one edits the reply
	deleted   bool      // the message went away while its first run was in flight
	// edited is the newest edit that came while the first run was in
	// flight; it is re-run once the first reply is there.
	edited *discordgo.Message
}

// answers is a bounded map from a message id to its answer: least recently
// used entries go first when full, and entries older than ttl are gone.
type answers struct {
	mu    sync.Mutex
	max   int
	ttl   time.Duration
	now   func() time.Time
	order *list.List // of *entry, most recent at the front
	byID  map[string]*list.Element
}

type entry struct {
	id string
	a  answer
}

func newAnswers(max int, ttl time.Duration, now func() time.Time) *answers {
	return &answers{max: max, ttl: ttl, now: now, order: list.New(), byID: make(map[string]*list.Element)}
}

// put stores a for message id.
func (s *answers) put(id string, a answer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if el, ok := s.byID[id]; ok {
		el.Value.(*entry).a = a
		s.order.MoveToFront(el)
		return
	}
	s.byID[id] = s.order.PushFront(&entry{id: id, a: a})
	for s.order.Len() > s.max {
		s.removeLocked(s.order.Back())
	}
}

// reserve stores a for id unless id has a live answer already; it reports
// whether it stored a. Handlers reserve before they hand the run to a
// goroutine, so that an edit, a delete or a second trigger that arrives
// while the run is in flight finds it.
func (s *answers) reserve(id string, a answer) bool {
	if _, ok := s.get(id); ok {
		return false
	}
	s.put(id, a)
	return true
}

// update applies f to the answer of id, if there is a live one, and returns
// the result.
func (s *answers) update(id string, f func(*answer)) (answer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if !ok {
		return answer{}, false
	}
	e := el.Value.(*entry)
	if s.now().Sub(e.a.at) > s.ttl {
		s.removeLocked(el)
		return answer{}, false
	}
	f(&e.a)
	s.order.MoveToFront(el)
	return e.a, true
}

// get returns the live answer of id.
func (s *answers) get(id string) (answer, bool) {
	return s.update(id, func(*answer) {})
}

// remove forgets id and returns what it was.
func (s *answers) remove(id string) (answer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	el, ok := s.byID[id]
	if !ok {
		return answer{}, false
	}
	a := el.Value.(*entry).a
	s.removeLocked(el)
	return a, true
}

func (s *answers) removeLocked(el *list.Element) {
	delete(s.byID, el.Value.(*entry).id)
	s.order.Remove(el)
}
