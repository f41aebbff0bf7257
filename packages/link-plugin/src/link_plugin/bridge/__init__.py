"""What every channel's bridge shares, so each channel plugin keeps only what its service differs in.

- `pairing`: the one-time pairing code (expiry, rate-limited wrong attempts, constant-time check).
- `retry`: flood control and network errors, retried without sending anything twice.
- `split`: where a long answer is split at a channel's limit.
- `answer`: the streamed answer, edited in place about once a second, split past the limit.
- `rules`: who is answered (the owner, in a direct chat or by a mention in a group; nothing else).
- `recovery`: answers that finished unseen, asked for at start and when the endpoint is back.
- `shown`: the answers shown, by their id, kept in the channel's folder so none is shown twice.
- `carry`: one message from the channel to the endpoint under its key, and its answer back.

A channel implements `carry.Place` (send, edit, typing, mark) for its service, translates its
library's errors into `retry.RetryLater` and `retry.Interrupted`, says whether a message mentions
the bot (`rules.Incoming`) and gives each message its key (`endpoint.message_id`, from the
service's own ids); the rest is here.
"""
