# One group per consumer: the consumer may only create and delete schedules inside it.
resource "aws_scheduler_schedule_group" "this" {
  name = var.name
  tags = var.tags
}
