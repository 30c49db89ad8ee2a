package envelope

// Kind is an envelope's envelope_kind: what its data is. Every success
// kind is one of these constants (an entity's kind, claim or term, is its
// ledger kind); a failure's is KindError.
const (
	KindList            = "list"
	KindSpawnRequest    = "spawn_request"
	KindSpawn           = "spawn"
	KindSpawns          = "spawns"
	KindSpawnCancel     = "spawn_cancel"
	KindSpawnHeartbeat  = "spawn_heartbeat"
	KindSpawnRun        = "spawn_run"
	KindAnswer          = "answer"
	KindSweep           = "sweep"
	KindSession         = "session"
	KindSessions        = "sessions"
	KindApproval        = "approval"
	KindApprovals       = "approvals"
	KindEscalation      = "escalation"
	KindFrames          = "frames"
	KindFrame           = "frame" // one frame of a frames page, a line of the CLI's NDJSON
	KindApprovalsSweep  = "approvals_sweep"
	KindApprovalsAudit  = "approvals_audit"
	KindApprovalsInbox  = "approvals_inbox"
	KindToken           = "token"
	KindTokens          = "tokens"
	KindTokensRevoked   = "tokens_revoked"
	KindConfirmation    = "confirmation"
	KindConfirmations   = "confirmations"
	KindTools           = "tools"
	KindPasskey         = "passkey"         // a registered passkey
	KindPasskeyOptions  = "passkey_options" // a WebAuthn ceremony's options
	KindPasskeySignIn   = "passkey_signin"  // a passkey sign-in's session
	KindHealth          = "health"
	KindInit            = "init"
	KindPassphrase      = "passphrase"
	KindDoctor          = "doctor"
	KindBackup          = "backup"  // dont backup
	KindRestore         = "restore" // dont restore
	KindConfig          = "config"  // dont config show|trust
	KindProjectSettings = "project_settings"
	KindSecretRotation  = "secret_rotation"
	KindVersion         = "version"
	KindHook            = "hook"
	KindHooks           = "hooks"
	KindHookTest        = "hook_test"
	KindHookDeliveries  = "hook_deliveries"
	KindHookDeliver     = "hook_deliver"
	// KindHarnessInstall is dont harness install's: the files it wrote.
	KindHarnessInstall = "harness_install"
	KindWhoAmI         = "whoami"
	KindLogin          = "login" // dont login, dont logout
	// KindSlackLinkCode is approvals.slack-link's: a one-time code that
	// links a Slack user to the calling approver token.
	KindSlackLinkCode = "slack_link_code"
)
