package sqlite

// DueApprovalsQuery is the approval sweep's query, for plan checks.
const DueApprovalsQuery = dueApprovalsQuery

// AnythingDueQuery is the sweep's one-statement probe, for plan checks.
const AnythingDueQuery = anythingDueQuery
