-- A table built with a seq_* function in plain GROUP BY SQL.
{{ config(materialized='table') }}

SELECT item, seq_count(ts, action, 'SEQ(view, buy)', INTERVAL 30 MINUTES) AS conversions
FROM {{ ref('clicks') }}
GROUP BY item
