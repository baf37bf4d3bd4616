output "stream_name" {
  description = "Put orders here (aws kinesis put-record --stream-name <this> --partition-key <order id> ...)."
  value       = aws_kinesis_stream.orders.name
}

output "stream_arn" {
  description = "ARN of the orders stream."
  value       = aws_kinesis_stream.orders.arn
}

output "function_name" {
  description = "The function that consumes the stream and the retry queue."
  value       = module.orders.function_name
}

output "event_source_mapping_uuid" {
  description = "The stream's event source mapping."
  value       = module.orders.event_source_mapping_uuid
}

output "retry_queue_url" {
  description = "Failed orders wait here for their next attempt."
  value       = module.orders.retry_queue_url
}

output "exhausted_queue_url" {
  description = "Orders given up on, each with the reason."
  value       = module.orders.exhausted_queue_url
}

output "on_failure_destination_arn" {
  description = "Where Lambda records the batches it gave up on."
  value       = module.orders.on_failure_destination_arn
}

output "claims_table_name" {
  description = "The claims table: one retry chain per order."
  value       = module.orders.claims_table_name
}

output "blocking_twin" {
  description = "With blocking_twin: the twin's stream, function, mapping and queues (null without)."
  value = var.blocking_twin ? {
    stream_name                = aws_kinesis_stream.orders_blocking[0].name
    stream_arn                 = aws_kinesis_stream.orders_blocking[0].arn
    function_name              = module.orders_blocking[0].function_name
    event_source_mapping_uuid  = module.orders_blocking[0].event_source_mapping_uuid
    retry_queue_url            = module.orders_blocking[0].retry_queue_url
    exhausted_queue_url        = module.orders_blocking[0].exhausted_queue_url
    on_failure_destination_arn = module.orders_blocking[0].on_failure_destination_arn
  } : null
}
