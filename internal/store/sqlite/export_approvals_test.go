package sqlite

// DueApprovalsQuery is the approval sweep's query, for plan checks.
const DueApprovalsQuery = dueApprovalsQuery
