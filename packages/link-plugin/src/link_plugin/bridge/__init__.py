"""What every channel's bridge shares, so each channel plugin keeps only what its service differs in.

- `tokens`: the channel's tokens, asked for in the terminal or read from stdin, checked for shape.
- `pairing`: the one-time pairing code (expiry, rate-limited wrong attempts, constant-time check)
  and the direct chat around it (each sender told how it went).
- `retry`: flood control and network errors, retried without sending anything twice.
- `split`: where a long answer is split at a channel's limit.
- `answer`: the streamed answer, edited in place about once a second, split past the limit.
- `rules`: who is answered (the owner, in a direct chat or by a mention in a group; nothing else).
- `recovery`: answers that finished unseen, asked for at start and when the endpoint is back.
- `shown`: the answers shown, by their id, kept in the channel's folder so none is shown twice.
- `carry`: one message from the channel to the endpoint under its key, and its answer back.
- `asking`: tool calls waiting for the owner, asked in their direct chat.
- `notices`: answers nobody waits for (a schedule's, another agent's), shown from the outbox.
- `base`: a bridge with all of the above wired, for a channel to subclass.

A channel subclasses `base.Bridge` with its connection to the service (`reach`, `listen`,
`close`), implements `carry.Place` (send, edit, typing, mark) and `asking.Asker` for its chats,
translates its library's errors into `retry.RetryLater` and `retry.Interrupted`, and reads each
message into a `rules.Heard`: whether it mentions the bot, as the service marks mentions, and its
key (`endpoint.message_id`, from the service's own ids). The rest is here.
"""
