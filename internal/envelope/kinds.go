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
	KindAnswer          = "answer"
	KindSweep           = "sweep"
	KindSession         = "session"
	KindApproval        = "approval"
	KindApprovals       = "approvals"
	KindEscalation      = "escalation"
	KindFrames          = "frames"
	KindApprovalsSweep  = "approvals_sweep"
	KindApprovalsAudit  = "approvals_audit"
	KindToken           = "token"
	KindTokens          = "tokens"
	KindTokensRevoked   = "tokens_revoked"
	KindConfirmation    = "confirmation"
	KindConfirmations   = "confirmations"
	KindTools           = "tools"
	KindHealth          = "health"
	KindInit            = "init"
	KindDoctor          = "doctor"
	KindProjectSettings = "project_settings"
	KindVersion         = "version"
	KindHook            = "hook"
	KindHooks           = "hooks"
	KindHookTest        = "hook_test"
	KindHookDeliveries  = "hook_deliveries"
	KindHookDeliver     = "hook_deliver"
)
