package web

import "testing"

// RuleWords says the rules the picker makes (assets/src/schedules.js
// ruleOf) in words, and nothing for any other.
func TestRuleWords(t *testing.T) {
	for _, c := range []struct{ rule, want string }{
		{"FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0", "every day at 09:00"},
		{"FREQ=WEEKLY;BYDAY=MO,TU,WE,TH,FR;BYHOUR=9;BYMINUTE=5;BYSECOND=0", "every weekday at 09:05"},
		{"RRULE:FREQ=WEEKLY;BYDAY=SU;BYHOUR=18;BYMINUTE=30;BYSECOND=0", "every Sunday at 18:30"},
		{"FREQ=HOURLY;BYMINUTE=0;BYSECOND=0", "every hour"},
		{"FREQ=HOURLY;BYMINUTE=0,15,30,45;BYSECOND=0", "every 15 minutes"},
		{"FREQ=HOURLY;BYMINUTE=0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,34,35,36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59;BYSECOND=0", "every 1 minute"},
		{"FREQ=DAILY;BYHOUR=9;BYMINUTE=0", ""}, // seconds from DTSTART
		{"FREQ=DAILY;BYHOUR=9;BYMINUTE=0;BYSECOND=0;COUNT=3", ""},
		{"FREQ=WEEKLY;BYDAY=MO,WE;BYHOUR=9;BYMINUTE=0;BYSECOND=0", ""},
		{"FREQ=HOURLY;BYMINUTE=0,7;BYSECOND=0", ""},
		{"FREQ=DAILY;BYHOUR=25;BYMINUTE=0;BYSECOND=0", ""},
		{"garbage", ""},
	} {
		if got := RuleWords(c.rule); got != c.want {
			t.Errorf("RuleWords(%q) = %q, want %q", c.rule, got, c.want)
		}
	}
}
