-- Ephemeral: inlined as a CTE into the models that use it.
{{ config(materialized='ephemeral') }}

SELECT customer_id, ts, action, item, price, to_date(ts) AS day
FROM {{ ref('clicks') }}
WHERE to_date(ts) <= DATE '{{ var("through_day", "2024-05-02") }}'
